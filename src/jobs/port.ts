/** What a run of a job asks for next. */
export type JobOutcome = { readonly done: true } | { readonly againInMs: number };
export interface JobContext {
  readonly attempt: number;
  readonly signal: AbortSignal;
}
export type JobHandler<D> = (data: D, context: JobContext) => Promise<JobOutcome>;
export interface JobQueue {
  readonly kind: 'in-process' | 'bullmq';
  handle<D extends Record<string, unknown>>(name: string, handler: JobHandler<D>, options?: { concurrency?: number }): void;
  add<D extends Record<string, unknown>>(name: string, data: D, options: { id: string; delayMs?: number }): Promise<boolean>;
  start(): Promise<void>;
  close(graceMs?: number): Promise<void>;
}
