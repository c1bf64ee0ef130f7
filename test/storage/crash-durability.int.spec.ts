import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildGateway } from '../support/child-gateway';

// Issue 31, item 3: a call the client was answered on must survive a crash of the gateway. An image
// call is settled before it is answered; the process is then killed (SIGKILL: nothing flushed, no
// exit handler) the moment the answer has arrived, and started again on the same DATA_DIR (or
// database). The embedded default's Postgres server outlives the gateway (the next start adopts it);
// embedded PGlite lives in the process, and a commit that did not reach the WAL file (PGlite has no
// WAL writer, so an asynchronous commit stays in its memory) dies with it. With the defaults of each
// mode every settlement must be found after the restart. Several rounds: the issue saw five of six
// calls lose theirs.

const ROUNDS = 4;

// Embedded: the default (a Postgres server of the gateway's own) and PGlite in the process.
const variants: Array<[string, NodeJS.ProcessEnv]> = process.env.DATABASE_URL
  ? [['Postgres (DATABASE_URL)', {}]]
  : [
      ['embedded Postgres', {}],
      ['embedded PGlite', { EMBEDDED_DATABASE: 'pglite' }],
    ];

interface LedgerEntry {
  readonly type: string;
  readonly data: { hold_id?: string; captured?: string; call?: { status: string } };
}

async function ledgerOf(gw: ChildGateway, token: string, accountId: string): Promise<LedgerEntry[]> {
  const res = await fetch(`${gw.base}/admin/v1/accounts/${accountId}/ledger?limit=1000`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: LedgerEntry[] }).data;
}

describe.each(variants)('a gateway killed right after answering a call, on %s', (storage, env) => {
  let gw: ChildGateway;
  beforeAll(async () => {
    gw = await ChildGateway.prepare({ env });
    // Each mode's own default: the test is of what an operator who sets nothing gets.
    delete gw.env.LEDGER_CALL_COMMIT;
    delete gw.env.GATEWAY_FAULT;
  });
  afterAll(() => gw.cleanup());

  it('keeps the settlement of every call it answered, with its mode\'s default commit setting', async () => {
    let token = await gw.start();
    expect(gw.output).toContain(`storage: ${storage}`);
    const { accountId, key } = await gw.accountWithKey('Crash', 'crash');
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 });
    const answered: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const { data, response } = await client.images.generate({ model: 'gpt-image-1', prompt: `a lighthouse, round ${round}` }).withResponse();
      expect(data.data?.length).toBe(1);
      answered.push(response.headers.get('x-gateway-trace')!);
      // The answer is in: the process dies now, as in an OOM kill or a crash.
      expect(await gw.terminate('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
      token = await gw.start();
    }

    const entries = await ledgerOf(gw, token, accountId);
    const settled = entries.filter((e) => e.type === 'HoldSettled');
    expect(settled.map((e) => e.data.hold_id)).toEqual(answered);
    for (const entry of settled) {
      expect(entry.data.captured).toBe('42000000'); // gpt-image-1, one image: 0.042 USD in nano-USD
      expect(entry.data.call?.status).toBe('success');
    }
    expect(entries.filter((e) => e.type === 'HoldReleased')).toEqual([]);
    const balance = (await (await fetch(`${gw.base}/v1/key/balance`, { headers: { 'x-api-key': key } })).json()) as { used_usd: string };
    expect(balance.used_usd).toBe('0.168'); // ROUNDS × 0.042
    await gw.stop();
  }, 300_000);
});
