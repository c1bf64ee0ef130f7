/** A decider's answer: the events to append, or a refusal with a domain code.
 * HTTP status codes are chosen at the edge, per protocol, never here. */
export type Decision<E, Code extends string = string> =
  | { readonly ok: true; readonly events: readonly E[] }
  | { readonly ok: false; readonly error: DomainError<Code> };

export interface DomainError<Code extends string = string> {
  readonly code: Code;
  readonly message: string;
}

export const accept = <E>(...events: E[]): Decision<E, never> => ({ ok: true, events });
export const refuse = <Code extends string>(code: Code, message: string): Decision<never, Code> => ({
  ok: false,
  error: { code, message },
});

export interface Decider<Command, State, Event, Code extends string = string> {
  readonly initialState: State;
  evolve(state: State, event: Event): State;
  decide(command: Command, state: State): Decision<Event, Code>;
}

export function assertNever(value: never): never {
  throw new Error(`unhandled case: ${JSON.stringify(value)}`);
}
