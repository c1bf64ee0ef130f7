import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/commands/ledger';
import type { AppendOptions } from '../../src/events/store/port';
import { commandsIn, meteredStore } from '../../src/metrics/event-store';
import { GatewayMetrics } from '../../src/metrics/metrics';
import { ledgerTestbed, storeWith, type LedgerTestbed, openAccount } from '../support/ledger';
import { Scrape } from '../support/prometheus';

let t: LedgerTestbed;
beforeAll(async () => {
  t = await ledgerTestbed();
});
afterAll(() => t.db.drop());

const reserve = (ledger: Ledger, accountId: string, name: string) =>
  ledger.reserve(accountId, { holdId: `${accountId}/${name}`, amount: 1_000n, keyId: 'key_a', spendCap: null, purpose: 'test', ttlSeconds: 60 });

describe('event store metrics', () => {
  it('count the commands each append carried: a group commit is one append of many commands', async () => {
    const metrics = new GatewayMetrics({}, { engine: 'test' });
    // What the engine was asked, to compare with: commands per append, as the handler sent them.
    const batches: number[] = [];
    const engine = storeWith(t.store, {
      append(streamId, events, expected, options?: AppendOptions) {
        batches.push(new Set(events.map((e) => e.metadata?.command_id)).size);
        return t.store.append(streamId, events, expected, options);
      },
    });
    const ledger = t.ledger({ store: meteredStore(engine, metrics) });
    const accountId = await openAccount(ledger, 'batched');
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => reserve(ledger, accountId, `h${i}`)));
    expect(results.every((r) => r.ok)).toBe(true);

    const s = new Scrape(await metrics.render());
    const engineLabel = { engine: 'test' };
    expect(Math.max(...batches)).toBeGreaterThan(1);
    expect(s.value('gateway_event_store_append_commands_count', engineLabel)).toBe(batches.length);
    expect(s.value('gateway_event_store_append_commands_sum', engineLabel)).toBe(batches.reduce((n, b) => n + b, 0));
    expect(s.value('gateway_event_store_append_commands_bucket', { ...engineLabel, le: '1' })).toBe(batches.filter((b) => b === 1).length);
    expect(s.value('gateway_event_store_append_seconds_count', engineLabel)).toBe(batches.length);
    expect(s.value('gateway_event_store_append_failures_total', { ...engineLabel, reason: 'conflict' })).toBe(0);
  });

  it('count a conflict with another writer of the stream (the command is then decided again and appended)', async () => {
    const metrics = new GatewayMetrics({}, { engine: 'test' });
    const first = t.ledger();
    const second = t.ledger({ store: meteredStore(t.store, metrics) });
    const accountId = await openAccount(first, 'two writers');
    await second.wallet(accountId); // cached at this revision
    expect((await reserve(first, accountId, 'one')).ok).toBe(true);
    expect((await reserve(second, accountId, 'two')).ok).toBe(true);
    const s = new Scrape(await metrics.render());
    expect(s.value('gateway_event_store_append_failures_total', { engine: 'test', reason: 'conflict' })).toBe(1);
    expect(s.value('gateway_event_store_append_failures_total', { engine: 'test', reason: 'error' })).toBe(0);
    expect(s.value('gateway_event_store_append_seconds_count', { engine: 'test' })).toBe(1);
  });

  it('pass the engine’s reset listener on, as the checked store does', () => {
    let listeners = 0;
    const resettable = storeWith(t.store, { onReset: () => (listeners++, () => {}) });
    meteredStore(resettable, new GatewayMetrics()).onReset?.(() => {});
    expect(listeners).toBe(1);
  });

  it('read a batch’s commands from its events’ command ids, each command’s events together', () => {
    const event = (command: string | undefined) => ({ id: 'x', type: 't', data: {}, ...(command ? { metadata: { command_id: command } } : {}) });
    expect(commandsIn([])).toBe(0);
    expect(commandsIn([event('a'), event('a'), event('b'), event('c'), event('c')])).toBe(3);
    expect(commandsIn([event(undefined), event(undefined)])).toBe(2);
  });
});
