import { z } from 'zod';
import { zodMessage } from '../../config/zod-message';
import type { NewEvent, RecordedEvent } from '../store/port';
import { jsonForm } from '../store/json';
import type { EventDefinition } from './codec';
import { consoleEvents, type ConsoleEvent } from './console';
import { idempotentCallEvents, type IdempotentCallEvent } from './idempotency';
import { enterpriseEvents, type EnterpriseEvent } from './enterprise';
import { keyEvents, type KeyEvent } from './key';
import { taskEvents, type TaskEvent } from './task';
import { knowledgeEvents, type KnowledgeEvent } from './knowledge';
import { walletEvents, type WalletEvent } from './wallet';
import { channelEvents, type ChannelEvent } from './channel';
import { paymentEvents, type PaymentEvent } from './payment';

export * from './wallet';
export * from './key';
export * from './enterprise';
export * from './knowledge';
export { INT32_MAX } from './codec';
export * from './idempotency';
export * from './task';
export * from './console';
export * from './channel';
export * from './payment';

export type DomainEvent = WalletEvent | KeyEvent | KnowledgeEvent | IdempotentCallEvent | TaskEvent | ConsoleEvent | EnterpriseEvent | ChannelEvent | PaymentEvent;

const definitions = new Map<string, EventDefinition<string, z.ZodType>>();
for (const definition of [...walletEvents, ...keyEvents, ...knowledgeEvents, ...idempotentCallEvents, ...taskEvents, ...consoleEvents, ...enterpriseEvents, ...channelEvents, ...paymentEvents]) definitions.set(definition.type, definition);

export class UnknownEventError extends Error {
  constructor(readonly type: string) {
    super(`unknown event type ${type}`);
  }
}

/** Validates and decodes stored event data into its domain form (bigints included). */
export function decodeEvent(type: string, data: unknown): DomainEvent {
  const definition = definitions.get(type);
  if (!definition) throw new UnknownEventError(type);
  return { type, data: definition.schema.parse(data) } as DomainEvent;
}

export function isKnownEvent(type: string): boolean {
  return definitions.has(type);
}

/** Why the catalog cannot decode some data, in one line: `path: message; ...` for a schema's refusal. */
export function decodeFailure(error: unknown): string {
  if (error instanceof z.ZodError) return zodMessage(error, 'data');
  return error instanceof Error ? error.message : String(error);
}

/** An event in the log that the catalog cannot decode (an older version, a bug, or a write from
 * before appends were checked). Whoever reads its stream gets this, never a bare schema error: the
 * account (or key, or base) of that stream is unavailable, and nothing else. */
export class UnreadableEventError extends Error {
  readonly code = 'event_unreadable' as const;
  constructor(
    readonly streamId: string,
    readonly revision: bigint,
    readonly eventId: string,
    readonly type: string,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`event ${eventId} (${type}) at revision ${revision} of stream ${streamId} cannot be decoded: ${reason}`, options);
    this.name = 'UnreadableEventError';
  }
}

export function decodeRecorded(event: RecordedEvent): DomainEvent {
  try {
    return decodeEvent(event.type, event.data);
  } catch (error) {
    throw new UnreadableEventError(event.streamId, event.revision, event.id, event.type, decodeFailure(error), { cause: error });
  }
}

/** An append refused because one of its events could not be read back: nothing of it was written. */
export class UnwritableEventError extends Error {
  readonly code = 'event_unwritable' as const;
  constructor(
    readonly streamId: string,
    readonly type: string,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`refused to append a ${type} event to stream ${streamId}: it could not be read back (${reason}); nothing was written`, options);
    this.name = 'UnwritableEventError';
  }
}

/**
 * The events in the form every store writes them, each checked to decode exactly as a reader of
 * the log will decode it: its data after the JSON round trip (bigints as decimal strings, text as
 * `storableText`, what JSON drops or turns into null), through the same schema. Throws
 * UnwritableEventError for the first that does not.
 */
export function readableForm(streamId: string, events: readonly NewEvent[]): NewEvent[] {
  return events.map((event) => {
    const data = jsonForm(event.data);
    try {
      decodeEvent(event.type, data);
    } catch (error) {
      throw new UnwritableEventError(streamId, event.type, decodeFailure(error), { cause: error });
    }
    return { ...event, data };
  });
}

export function schemaVersion(type: string): number {
  return definitions.get(type)?.version ?? 1;
}
