import { randomUUID } from 'node:crypto';
import { schemaVersion } from '../../src/events/catalog';
import { walletStream } from '../../src/events/catalog/wallet';
import type { EventStore, NewEvent } from '../../src/events/store/port';

/** What one seeded call captures (nano-USD), as bench/ledger-scale/seed.ts writes them. */
export const SEEDED_CAPTURE = 1000n;

/**
 * A long wallet history written past the command side, as a restore or bench/ledger-scale/seed.ts
 * leaves one: `calls` pairs of FundsReserved + HoldSettled (each capturing SEEDED_CAPTURE, with its
 * call record) appended straight to the wallet's stream, no snapshot taken, no projection told.
 * Returns the stream's last revision.
 */
export async function appendCallHistory(store: EventStore, accountId: string, keyId: string, calls: number, perAppend = 500): Promise<bigint> {
  const stream = walletStream(accountId);
  let revision = (await store.readStream(stream, { direction: 'backwards', maxCount: 1 }))[0]!.revision;
  const at = Math.floor(Date.now() / 1000);
  const event = (type: string, data: unknown): NewEvent => ({ id: randomUUID(), type, data, metadata: { command_id: randomUUID(), schema_version: schemaVersion(type) } });
  for (let done = 0; done < calls; ) {
    const batch: NewEvent[] = [];
    for (; batch.length < perAppend && done < calls; done++) {
      const holdId = `hold_seed_${accountId}_${done}`;
      const requestId = `req_seed_${accountId}_${done}`;
      batch.push(
        event('FundsReserved', { hold_id: holdId, amount: '5000', key_id: keyId, purpose: 'chat', expires_at: at + 600, at, model: 'chat-model', endpoint: 'chat-completions', request_id: requestId }),
        event('HoldSettled', {
          hold_id: holdId,
          hold_amount: '5000',
          captured: String(SEEDED_CAPTURE),
          released: String(5000n - SEEDED_CAPTURE),
          at,
          call: {
            request_id: requestId, key_id: keyId, model: 'chat-model', endpoint: 'chat-completions', status: 'success',
            error_code: null, error_message: null, input_tokens: 12, output_tokens: 16, cached_tokens: 0, unit_count: null,
            unit_type: null, latency_ms: 3, attempts_count: 1, channel_id: 'seed', task_id: null, submitted_at: at,
            result_urls: [], result_expires_at: null,
          },
        }),
      );
    }
    revision = (await store.append(stream, batch, revision)).nextRevision;
  }
  return revision;
}
