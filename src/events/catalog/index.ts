import type { z } from 'zod';
import type { RecordedEvent } from '../store/port';
import type { EventDefinition } from './codec';
import { idempotentCallEvents, type IdempotentCallEvent } from './idempotency';
import { keyEvents, type KeyEvent } from './key';
import { knowledgeEvents, type KnowledgeEvent } from './knowledge';
import { walletEvents, type WalletEvent } from './wallet';

export * from './wallet';
export * from './key';
export * from './knowledge';
export * from './idempotency';

export type DomainEvent = WalletEvent | KeyEvent | KnowledgeEvent | IdempotentCallEvent;

const definitions = new Map<string, EventDefinition<string, z.ZodType>>();
for (const definition of [...walletEvents, ...keyEvents, ...knowledgeEvents, ...idempotentCallEvents]) definitions.set(definition.type, definition);

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

export function decodeRecorded(event: RecordedEvent): DomainEvent {
  return decodeEvent(event.type, event.data);
}

export function schemaVersion(type: string): number {
  return definitions.get(type)?.version ?? 1;
}
