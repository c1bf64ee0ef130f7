import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokensFromChars } from '../../src/upstream/pricing';
import { ChildGateway } from '../support/child-gateway';

// Issue 18, item 4, as an operator meets it: `gateway serve` in a child process gets SIGTERM while a
// slow stream from the (demo) simulator is in flight. Within SHUTDOWN_GRACE_S the stream finishes;
// with a short grace it is ended with the protocol's error frame and billed on what was delivered.
// Either way the process exits 0, no hold is left open and the projections have the call.

let gw: ChildGateway;
let key: string;
let accountId: string;

beforeAll(async () => {
  gw = await ChildGateway.prepare();
  await gw.start();
  const account = await gw.run(['accounts', 'create', 'Shutdown']);
  expect(account.code, account.stderr).toBe(0);
  accountId = JSON.parse(account.stdout).id as string;
  const created = await gw.run(['keys', 'create', accountId, '--name', 'shutdown']);
  expect(created.code, created.stderr).toBe(0);
  key = JSON.parse(created.stdout).key as string;
  await gw.terminate();
}, 240_000);
afterAll(() => gw.cleanup());

/** The account's last call-log row and held amount, read from the stopped gateway's database. */
async function afterExit() {
  const sql = await gw.openDatabase();
  try {
    const [row] = await sql.query<{ status: string; error_code: string | null; output_tokens: string; cost: string }>(
      'SELECT status, error_code, output_tokens::text AS output_tokens, cost::text AS cost FROM call_log WHERE account_id = $1 ORDER BY created_at DESC, submitted_at DESC LIMIT 1',
      [accountId],
    );
    const [entry] = await sql.query<{ held_after: string }>('SELECT held_after::text AS held_after FROM ledger_entries WHERE account_id = $1 ORDER BY seq DESC LIMIT 1', [accountId]);
    const calls = await sql.query<{ n: string }>('SELECT count(*)::text AS n FROM call_log WHERE account_id = $1', [accountId]);
    return { row, held: entry?.held_after, calls: Number(calls[0]!.n) };
  } finally {
    await sql.close();
  }
}

/** Resolves once a new connection to the gateway is refused. */
async function refusing() {
  for (;;) {
    const accepted = await fetch(`${gw.base}/healthz`).then(
      () => true,
      () => false,
    );
    if (!accepted) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('SIGTERM with a stream in flight', () => {
  it('the stream finishes within the grace; new connections are refused; exit 0 with no hold open', async () => {
    delete gw.env.SHUTDOWN_GRACE_S;
    await gw.start();
    const openai = new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'one two three four five six [[sim:slow_stream:250]]' }],
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    let exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | null = null;
    let refused: Promise<void> | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (exit === null) {
        exit = gw.terminate('SIGTERM');
        refused = refusing();
      }
    }
    await refused;
    expect(text).toBe('Echo: one two three four five six');
    expect(finish).toBe('stop');
    expect(await exit).toEqual({ code: 0, signal: null });
    const { row, held, calls } = await afterExit();
    expect(calls).toBe(1);
    expect(row).toMatchObject({ status: 'success', error_code: null });
    expect(held).toBe('0');
  }, 240_000);

  it('past a short SHUTDOWN_GRACE_S the stream ends with its error frame, billed on what was delivered; exit 0 with no hold open', async () => {
    gw.env.SHUTDOWN_GRACE_S = '1';
    await gw.start();
    const openai = new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 });
    // About 2000 tokens, a frame every 100 ms: minutes, were it not ended.
    const stream = await openai.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'a long answer [[sim:slow_stream:100,reply_tokens:2000]]' }],
      stream: true,
    });
    let text = '';
    let exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | null = null;
    let ended: unknown = 'finished';
    try {
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (exit === null && text.length > 0) exit = gw.terminate('SIGTERM');
      }
    } catch (error) {
      const e = error as APIError;
      ended = { code: e.code, type: e.type, message: e.message };
    }
    expect(ended).toEqual({ code: 'gateway_shutting_down', type: 'server_error', message: 'the gateway is shutting down; retry the request' });
    expect(await exit).toEqual({ code: 0, signal: null });
    const { row, held, calls } = await afterExit();
    expect(calls).toBe(2);
    expect(row).toMatchObject({ status: 'interrupted', error_code: 'gateway_shutting_down', output_tokens: String(tokensFromChars(text.length)) });
    expect(Number(row!.output_tokens)).toBeLessThan(2000);
    expect(BigInt(row!.cost)).toBeGreaterThan(0n);
    expect(held).toBe('0');
    // The ledger and the projections agree.
    const verify = await gw.run(['ledger', 'verify']);
    expect(verify.code, verify.stderr + verify.stdout).toBe(0);
  }, 240_000);
});
