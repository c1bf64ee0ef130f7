/**
 * Issue 23, finding 1: no usage block an upstream sends can corrupt the ledger. Bad usage (a fraction,
 * a negative, a string, 1e20, more output than the request allowed by far) is "usage unknown": the
 * call is billed on the interrupted-stream estimate, its row says `upstream_usage_invalid`, a warning
 * names the channel; the wallet still loads after a restart and `ledger verify` is clean.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatProtocol } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { CAPTURE_FACTOR } from '../../src/upstream/capture';
import { verifyLedger } from '../../src/projections/verify';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { testDatabase, type TestDatabase } from '../support/storage';
import { ANSWERS, callGateway, estimatedPrompt, MODELS, ScriptedUpstream, scriptedConfig, TRANSLATED_MODELS, type Scripted } from './scripted-upstream';
import { expectedCost } from './support';

const GRANT = parseUsd('40.44');
const PROTOCOLS = Object.keys(MODELS) as ChatProtocol[];
/** HTTP round trips through a real gateway: a few dozen sequences stay within seconds. */
const HTTP_RUNS = Number(process.env.FC_RUNS_HTTP ?? 40);

let upstream: ScriptedUpstream;
let db: TestDatabase;
let t: TestGateway;
let base: string;

async function start() {
  t = await startTestGateway({ config: scriptedConfig(upstream.url), db, chatTimeoutMs: 5000 });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
}

/** A new gateway on the same database: nothing cached, every wallet read back from the log. */
async function restart() {
  await t.close();
  await start();
}

beforeAll(async () => {
  upstream = await ScriptedUpstream.start();
  db = await testDatabase();
  await start();
});
afterAll(async () => {
  await t.close();
  await db.drop();
  await upstream.close();
});

interface Settled {
  captured: string;
  call: { status: string; input_tokens: number; output_tokens: number; error_code: string | null; error_message: string | null; channel_id: string | null };
}

/** The settlements of an account once every hold of it is closed. */
async function settlements(accountId: string): Promise<Settled[]> {
  await t.gateway.ledger.idle();
  await expect.poll(async () => (await t.gateway.ledger.wallet(accountId)).held, { timeout: 5000 }).toBe(0n);
  const events = await t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.filter((e) => e.type === 'HoldSettled').map((e) => e.data as Settled);
}

/** Everything a restart must find intact: the wallet, a new account, the balance endpoint, verify. */
async function expectLedgerSurvivesRestart(accountId: string, key: string) {
  const before = await t.gateway.ledger.wallet(accountId);
  await restart();
  const after = await t.gateway.ledger.wallet(accountId);
  expect({ balance: after.balance, held: after.held }).toEqual({ balance: before.balance, held: before.held });
  expect((await fetch(`${base}/v1/key/balance`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
  expect((await t.admin('POST', '/accounts', { name: 'after the restart' })).statusCode).toBe(201);
  await t.gateway.runner.catchUpToHead();
  expect(await verifyLedger(t.gateway.storage.store, t.db.sql)).toEqual([]);
}

describe('a bad usage block', () => {
  const cases: Array<[string, ChatProtocol, boolean, unknown]> = [
    ['prompt_tokens 1e20 (chat-completions)', 'chat-completions', false, { prompt_tokens: 1e20, completion_tokens: 3 }],
    ['prompt_tokens 1.5 (chat-completions stream)', 'chat-completions', true, { prompt_tokens: 1.5, completion_tokens: 3 }],
    ['a negative input_tokens (messages)', 'messages', false, { input_tokens: -40, output_tokens: 3 }],
    ['output_tokens as a string (messages stream)', 'messages', true, { input_tokens: 5, output_tokens: '3' }],
    ['2^53 + 2 output tokens (responses stream)', 'responses', true, { input_tokens: 5, output_tokens: 2 ** 53 + 2 }],
    ['far more output than max tokens allowed (generate-content)', 'generate-content', false, { promptTokenCount: 5, candidatesTokenCount: 5_000_000 }],
  ];

  it.each(cases)('%s: answered, billed on the estimate, the row marked, the channel named, the ledger intact', async (_name, protocol, stream, usage) => {
    const { accountId, key } = await t.accountWithKey();
    upstream.answer(stream ? ANSWERS[protocol].stream(usage) : ANSWERS[protocol].body(usage));
    const response = await callGateway(base, key, protocol, stream);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('hello there');

    const [settled, ...more] = await settlements(accountId);
    expect(more).toHaveLength(0);
    expect(settled!.call).toMatchObject({ status: 'success', error_code: 'upstream_usage_invalid', input_tokens: estimatedPrompt(protocol), channel_id: `${protocol}-channel` });
    expect(settled!.call.error_message).toMatch(/^upstream usage invalid \(.+\): billed on the estimate$/);
    // The interrupted-stream estimate: the estimated prompt, output from the characters delivered.
    expect(BigInt(settled!.captured)).toBe(expectedCost(estimatedPrompt(protocol), 0, settled!.call.output_tokens));
    expect(settled!.call.output_tokens).toBeGreaterThan(0);
    expect(t.logs.some((line) => line.includes('upstream usage invalid') && line.includes(`"channel":"${protocol}-channel"`))).toBe(true);

    await expectLedgerSurvivesRestart(accountId, key);
  });

  it('marks an interrupted stream with bad usage in its message, keeping its own code', async () => {
    const made = await t.accountWithKey();
    const full = ANSWERS['chat-completions'].stream({ prompt_tokens: -1, completion_tokens: 2 }).body;
    // Everything but the [DONE]: the stream ends without its terminator.
    upstream.answer({ contentType: 'text/event-stream', body: full.slice(0, full.lastIndexOf('data: [DONE]')) });
    const response = await callGateway(base, made.key, 'chat-completions', true);
    await response.text();
    const [settled] = await settlements(made.accountId);
    expect(settled!.call).toMatchObject({ status: 'interrupted', error_code: 'upstream_error' });
    expect(settled!.call.error_message).toMatch(/; upstream usage invalid \(prompt_tokens is negative \(-1\)\): billed on the estimate$/);
  });
});

/** Any usage value a vendor or a broken proxy might send. */
const count = fc.oneof(
  { weight: 3, arbitrary: fc.nat({ max: 5000 }) },
  fc.nat({ max: 20_000_000 }),
  fc.integer({ min: -1000, max: -1 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(1e20, 2 ** 53 + 2, 0.5, '12', null, true, [], {}),
);
const USAGE_FIELDS: Record<ChatProtocol, string[]> = {
  'chat-completions': ['prompt_tokens', 'completion_tokens'],
  messages: ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'],
  responses: ['input_tokens', 'output_tokens'],
  'generate-content': ['promptTokenCount', 'candidatesTokenCount', 'thoughtsTokenCount'],
};

/** One call: the channel's protocol, the client's (another one: through translation), and the upstream's
 * answer: its protocol's own answer with an arbitrary usage block, or an arbitrary body. */
const scripted = fc.constantFrom(...PROTOCOLS).chain((protocol) =>
  fc.record({
    protocol: fc.constant(protocol),
    client: fc.oneof({ weight: 2, arbitrary: fc.constant(protocol) }, fc.constantFrom(...PROTOCOLS)),
    stream: fc.boolean(),
    answer: fc.oneof(
      { weight: 4, arbitrary: fc.record(Object.fromEntries(USAGE_FIELDS[protocol].map((f) => [f, count])), { requiredKeys: [] }).map((usage) => ({ usage })) },
      fc.jsonValue({ maxDepth: 2 }).map((usage) => ({ usage })),
      fc.oneof(fc.json({ maxDepth: 2 }), fc.string({ maxLength: 40 })).map((body) => ({ body })),
    ),
  }),
);

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

function toScripted(s: { protocol: ChatProtocol; client: ChatProtocol; stream: boolean; answer: { usage: unknown } | { body: string } }): Scripted {
  if ('body' in s.answer) return s.stream ? { contentType: 'text/event-stream', body: `data: ${s.answer.body}\n\n` } : { contentType: 'application/json', body: s.answer.body };
  return s.stream ? ANSWERS[s.protocol].stream(s.answer.usage) : ANSWERS[s.protocol].body(s.answer.usage);
}

describe('property: arbitrary usage blocks and bodies through every protocol, native and translated', () => {
  it('the gateway answers each call, money is conserved, every call has its row, and the ledger survives a restart', async () => {
    const { accountId, key } = await t.accountWithKey();
    // Enough that no sequence runs the wallet dry (a 402 is no answer from the upstream).
    expect((await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '1000', reference: 'property' })).statusCode).toBeLessThan(300);
    let calls = 0;
    await fc.assert(
      fc.asyncProperty(scripted, async (s) => {
        upstream.answer(toScripted(s));
        const native = s.client === s.protocol;
        const response = await callGateway(base, key, s.client, s.stream, { model: native ? MODELS[s.protocol] : TRANSLATED_MODELS[s.protocol] });
        await response.text();
        calls += 1;
        // Answered: natively the upstream's 200 passes through (a body it did not make sense of
        // included), unless it is no JSON object at all (issue 31, 7a: a failed attempt, 502);
        // translated, a body that cannot be translated is an error in the client's shape.
        if (native) expect(response.status).toBe(!s.stream && 'body' in s.answer && !isJsonObject(s.answer.body) ? 502 : 200);
        else expect([200, 500, 502]).toContain(response.status);
      }),
      { numRuns: HTTP_RUNS },
    );

    await settlements(accountId);
    const events = await t.gateway.storage.store.readStream(`wallet-${accountId}`);
    const sum = (type: string, field: string) => events.filter((e) => e.type === type).reduce((total, e) => total + BigInt((e.data as Record<string, string>)[field]!), 0n);
    const wallet = await t.gateway.ledger.wallet(accountId);
    // Money is conserved: what was granted and paid in is the balance plus what the calls captured.
    const credited = sum('CreditGranted', 'amount') + sum('WalletToppedUp', 'amount');
    expect(credited).toBe(GRANT + parseUsd('1000'));
    expect(wallet.balance + sum('HoldSettled', 'captured')).toBe(credited);
    expect(wallet.held).toBe(0n);
    // Whatever the upstream answered, no capture passed its bound (issue 31, item 2).
    for (const e of events.filter((e) => e.type === 'HoldSettled')) {
      const { captured, hold_amount } = e.data as { captured: bigint; hold_amount: bigint };
      expect(BigInt(captured)).toBeLessThanOrEqual(CAPTURE_FACTOR * BigInt(hold_amount));
    }
    // Every call ended its hold exactly once, and has its row.
    expect(events.filter((e) => e.type === 'FundsReserved')).toHaveLength(calls);
    expect(events.filter((e) => e.type === 'HoldSettled' || e.type === 'HoldReleased')).toHaveLength(calls);
    await t.gateway.runner.catchUpToHead();
    const rows = await t.db.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM call_log WHERE account_id = $1`, [accountId]);
    expect(Number(rows[0]!.n)).toBe(calls);

    await expectLedgerSurvivesRestart(accountId, key);
  });
});
