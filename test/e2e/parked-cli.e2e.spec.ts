import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildGateway } from '../support/child-gateway';

let gw: ChildGateway;
beforeAll(async () => {
  gw = await ChildGateway.prepare();
});
afterAll(() => gw.cleanup());

describe('an event the gateway cannot decode, planted in the events table', () => {
  it('is listed by ledger verify --parked, counted by projections status and /metrics; only its account answers 503', { timeout: 180_000 }, async () => {
    const token = await gw.start();
    const admin = async (path: string, body: unknown) =>
      (await fetch(`${gw.base}/admin/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json())) as { id: string; key: string };
    const created = async () => {
      const account = await admin('/accounts', { name: 'someone' });
      return { accountId: account.id, key: (await admin(`/accounts/${account.id}/keys`, { name: 'k' })).key };
    };
    const bad = await created();
    const good = await created();
    await gw.stop();

    const sql = await gw.openDatabase();
    const eventId = randomUUID();
    try {
      await sql.query(
        `INSERT INTO events (stream_id, stream_revision, event_id, type, data, transaction_id)
         SELECT $1, max(stream_revision) + 1, $2::uuid, 'CreditGranted', '{"grant_id":"g","amount":"1.5","reason":"r","at":1700000000}'::jsonb,
                pg_current_xact_id() FROM events WHERE stream_id = $1`,
        [`wallet-${bad.accountId}`, eventId],
      );
    } finally {
      await sql.close();
    }

    const parked = await gw.run(['ledger', 'verify', '--parked']);
    expect(parked.code, parked.stderr).toBe(1);
    const lines = parked.stdout.trim().split('\n');
    expect(lines.filter((line) => line.startsWith('PARKED ')).map((line) => line.split(' ').slice(0, 4).join(' ')).sort()).toEqual(
      // Every projection that follows wallets (the task views do: a task's money).
      ['accounts', 'audit', 'call-log', 'ledger', 'tasks'].map((name) => `PARKED ${name} wallet-${bad.accountId} revision=2`),
    );
    expect(parked.stdout).toContain(`event=${eventId}`);
    expect(parked.stdout).toContain('cannot be decoded: amount: ');
    expect(lines.at(-1)).toBe('5 parked event(s)');

    const status = await gw.run(['projections', 'status']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^accounts\tcommit=\d+\tprepare=\d+\tparked=1$/m);
    expect(status.stdout).toMatch(/^keys\tcommit=\d+\tprepare=\d+\tparked=0$/m);

    const verify = await gw.run(['ledger', 'verify']);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain(`DIFF stream wallet-${bad.accountId} parked by accounts`);
    expect((await gw.run(['ledger', 'verify', '--account', good.accountId])).code).toBe(0);

    await gw.start();
    const balance = (key: string) => fetch(`${gw.base}/v1/key/balance`, { headers: { 'x-api-key': key } });
    expect((await balance(good.key)).status).toBe(200);
    expect((await balance(bad.key)).status).toBe(503);
    expect(await (await fetch(`${gw.base}/metrics`)).text()).toContain('gateway_projection_parked_events{projection="ledger"} 1');
    await gw.stop();
  });
});
