import { randomUUID } from 'node:crypto';
import { v5 as uuidv5 } from 'uuid';
import { decodeRecorded, schemaVersion, type DomainEvent } from '../events/catalog';
import { ConcurrencyError, type EventStore, type Position } from '../events/store/port';
import type { Decider, DomainError } from './decision';

const EVENT_ID_NAMESPACE = '6f1d3c1e-2b7a-4c55-9d0e-3f6a8b9c0d21';

/** Event ids derive from the command id, so a retried command appends the same ids
 * and the store recognises the retry as a duplicate instead of charging twice. */
export const eventIdFor = (commandId: string, index: number) => uuidv5(`${commandId}#${index}`, EVENT_ID_NAMESPACE);

export interface Loaded<S> {
  readonly revision: bigint; // -1n: no stream
  readonly state: S;
}

export type Handled<S> =
  | { ok: true; state: S; revision: bigint; position: Position | null; events: readonly DomainEvent[]; duplicate: boolean }
  | { ok: false; error: DomainError };

export interface HandleOptions {
  /** Makes the command idempotent; a random id is used when absent. */
  readonly commandId?: string;
  readonly metadata?: Record<string, unknown>;
}

const MAX_CONFLICT_RETRIES = 25;
const CACHE_LIMIT = 10_000;

/**
 * Loads an aggregate, decides, appends with the expected revision, and retries on a
 * conflict. Commands for one stream run one at a time in this process (a queue per
 * stream) and the folded state is cached with its revision, so a hot wallet is read
 * forward from where it was, not replayed, and rarely conflicts with itself.
 */
export class CommandHandler<C, S, E extends DomainEvent> {
  private readonly cache = new Map<string, Loaded<S>>();
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: EventStore,
    private readonly decider: Decider<C, S, E>,
  ) {}

  /** Current state, read forward from the cached revision: real time, never a projection. */
  load(streamId: string): Promise<Loaded<S>> {
    return this.serial(streamId, () => this.refresh(streamId));
  }

  handle(streamId: string, command: C, options: HandleOptions = {}): Promise<Handled<S>> {
    return this.serial(streamId, () => this.run(streamId, command, options));
  }

  private async run(streamId: string, command: C, options: HandleOptions): Promise<Handled<S>> {
    const commandId = options.commandId ?? randomUUID();
    // Optimistic: decide on the cached state and let the expected revision catch a
    // stale cache (another instance wrote); read forward only then, or before a refusal.
    const cached = this.cache.get(streamId);
    let loaded = cached ?? (await this.refresh(streamId));
    let fresh = cached === undefined;
    for (let attempt = 0; ; attempt++) {
      const decision = this.decider.decide(command, loaded.state);
      if (!decision.ok) {
        if (!fresh) {
          loaded = await this.refresh(streamId);
          fresh = true;
          continue;
        }
        if (options.commandId && (await this.alreadyApplied(streamId, commandId))) {
          return { ok: true, state: loaded.state, revision: loaded.revision, position: null, events: [], duplicate: true };
        }
        return { ok: false, error: decision.error };
      }
      if (decision.events.length === 0) {
        return { ok: true, state: loaded.state, revision: loaded.revision, position: null, events: [], duplicate: false };
      }
      try {
        const result = await this.store.append(
          streamId,
          decision.events.map((event, i) => ({
            id: eventIdFor(commandId, i),
            type: event.type,
            data: event.data,
            metadata: { ...options.metadata, command_id: commandId, schema_version: schemaVersion(event.type) },
          })),
          loaded.revision === -1n ? 'no_stream' : loaded.revision,
        );
        if (result.duplicate) {
          this.cache.delete(streamId);
          const reloaded = await this.refresh(streamId);
          return { ok: true, state: reloaded.state, revision: reloaded.revision, position: result.position, events: [], duplicate: true };
        }
        const state = decision.events.reduce((s, e) => this.decider.evolve(s, e), loaded.state);
        this.remember(streamId, { revision: result.nextRevision, state });
        return { ok: true, state, revision: result.nextRevision, position: result.position, events: decision.events, duplicate: false };
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || attempt >= MAX_CONFLICT_RETRIES) throw error;
        // Another process wrote to the stream: read forward and decide again.
        loaded = await this.refresh(streamId);
        fresh = true;
      }
    }
  }

  private async refresh(streamId: string): Promise<Loaded<S>> {
    const cached = this.cache.get(streamId) ?? { revision: -1n, state: this.decider.initialState };
    const newer = await this.store.readStream(streamId, { fromRevision: cached.revision + 1n });
    if (newer.length === 0) return cached;
    let state = cached.state;
    let revision = cached.revision;
    for (const recorded of newer) {
      state = this.decider.evolve(state, decodeRecorded(recorded) as E);
      revision = recorded.revision;
    }
    const loaded = { revision, state };
    this.remember(streamId, loaded);
    return loaded;
  }

  /** A refused command whose events are already in the stream was a retry of one that succeeded. */
  private async alreadyApplied(streamId: string, commandId: string): Promise<boolean> {
    const firstId = eventIdFor(commandId, 0);
    const tail = await this.store.readStream(streamId, { direction: 'backwards', maxCount: 200 });
    return tail.some((event) => event.id === firstId);
  }

  private remember(streamId: string, loaded: Loaded<S>) {
    this.cache.delete(streamId);
    this.cache.set(streamId, loaded);
    if (this.cache.size > CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value as string);
  }

  private serial<T>(streamId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(streamId) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.catch(() => {});
    this.queues.set(streamId, settled);
    void settled.then(() => {
      if (this.queues.get(streamId) === settled) this.queues.delete(streamId);
    });
    return next;
  }
}
