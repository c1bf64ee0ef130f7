import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../src/storage/sql';
import { ChildGateway } from '../support/child-gateway';

// Issue 23, finding 5: the Idempotency-Key record is completed after the settlement, in another
// write. The gateway is killed between the two (fault point `image-settled`), restarted, and the
// client retries with the same key once the key's lease is over: the ledger knows the run was
// billed, so the call is not run (or charged) a second time.

let gw: ChildGateway;
beforeAll(async () => {
  gw = await ChildGateway.prepare();
});
afterAll(() => gw.cleanup());

/** The child's database while no gateway holds it. */
const database = (): Promise<Sql> => gw.openDatabase();

describe('a crash between the charge and the Idempotency-Key record', () => {
  it('charges once: the retry after the lease is told the call was billed, and does not run it again', async () => {
    gw.env.GATEWAY_FAULT = 'image-settled';
    // The charge must outlive the kill: embedded, the database dies with the process, and an
    // asynchronous commit would lose its last transactions (sync is the embedded default; said
    // here so that the test holds whatever the default becomes).
    gw.env.LEDGER_CALL_COMMIT = 'sync';
    await gw.start();
    const account = await gw.run(['accounts', 'create', 'Crash']);
    expect(account.code, account.stderr).toBe(0);
    const accountId = JSON.parse(account.stdout).id as string;
    const created = await gw.run(['keys', 'create', accountId, '--name', 'crash']);
    const key = JSON.parse(created.stdout).key as string;

    const image = () =>
      fetch(`${gw.base}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'crash-1' },
        body: JSON.stringify({ model: 'gpt-image-1', prompt: 'a lighthouse' }),
      });
    await expect(image()).rejects.toThrow();
    expect(await gw.exited()).toBe('SIGKILL');

    // The key's record is still "in flight"; its 10-minute lease is made to be over.
    const sql = await database();
    try {
      const rows = await sql.query<{ state: string }>(`SELECT state FROM idempotency_keys WHERE idem_key = 'crash-1'`);
      expect(rows).toEqual([{ state: 'in_flight' }]);
      await sql.query(`UPDATE idempotency_keys SET lease_until = 0 WHERE idem_key = 'crash-1'`);
    } finally {
      await sql.close();
    }

    delete gw.env.GATEWAY_FAULT;
    await gw.start();
    for (let attempt = 0; attempt < 2; attempt++) {
      const retry = await image();
      expect(retry.status).toBe(409);
      const { error } = (await retry.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('idempotency_response_not_cached');
      expect(error.message).toMatch(/was billed \(request req_/);
    }

    const balance = (await (await fetch(`${gw.base}/v1/key/balance`, { headers: { 'x-api-key': key } })).json()) as { used_usd: string };
    expect(balance.used_usd).toBe('0.042'); // gpt-image-1, one image, once
    await gw.stop();
    const verify = await gw.run(['ledger', 'verify']);
    expect(verify.code, verify.stderr + verify.stdout).toBe(0);
    // Two starts of a child gateway on a loaded machine.
  }, 240_000);
});
