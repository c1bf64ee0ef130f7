import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADJUSTMENT_COLUMNS, CSV_COLUMNS } from '../../src/projections/call-log/queries';
import { startChatHarness, type ChatHarness } from './support';

let h: ChatHarness;
let accountId: string;
let keyId: string;
let openai: OpenAI;

beforeAll(async () => {
  h = await startChatHarness({ chatTimeoutMs: 3000 });
  const made = await h.t.accountWithKey();
  accountId = made.accountId;
  keyId = made.keyId;
  openai = new OpenAI({ apiKey: made.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
  const ask = (content: string, extra: object = {}) =>
    openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content }], ...extra }).catch((e) => e);
  await ask('first');
  h.sim.enqueue('http_500');
  await ask('after failover');
  h.sim.enqueue('http_500', 'http_500', 'http_500');
  await ask('all down');
  await ask('too big', { max_tokens: 30_000_000 });
  await openai.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
  await h.t.gateway.runner.catchUpToHead();
});
afterAll(() => h.close());

type Row = Record<string, unknown>;
const logs = async (query = '') => (await h.t.admin('GET', `/accounts/${accountId}/logs${query}`)).json() as { data: Row[]; next_cursor: string | null };

describe('call log', () => {
  it('has one row per final outcome, attempts folded in, rejected calls at cost 0', async () => {
    const { data } = await logs();
    expect(data).toHaveLength(5);
    // The CSV's columns (the spec's and the adjustment's), and the built-in tool fee part of the cost (null here: no tool fees), the agent, the model asked for when a fallback answered, and the cache writes by lifetime.
    for (const row of data) expect(Object.keys(row).sort()).toEqual([...CSV_COLUMNS, ...ADJUSTMENT_COLUMNS, 'tool_fee_usd', 'agent_id', 'requested_model', 'cache_write_tokens', 'cache_write_1h_tokens'].sort());
    const byStatus = (s: string) => data.filter((r) => r.status === s);
    expect(byStatus('success')).toHaveLength(2);
    expect(byStatus('error')).toHaveLength(1);
    expect(byStatus('rejected')).toHaveLength(2);
    expect(data.find((r) => r.status === 'error')).toMatchObject({ attempts_count: 3, error_code: 'upstream_error', cost_usd: '0.00' });
    expect(data.map((r) => r.attempts_count).sort()).toEqual([0, 0, 1, 2, 3]);
    for (const r of byStatus('rejected')) expect(r.cost_usd).toBe('0.00');
    expect(byStatus('rejected').map((r) => r.error_code).sort()).toEqual(['model_not_found', 'quota_exceeded']);
    for (const r of byStatus('success')) {
      expect(Number(r.cost_usd)).toBeGreaterThan(0);
      expect(r).toMatchObject({ key_name: 'test key', model: 'chat-model', key_prefix: expect.stringMatching(/^sk-/) });
      expect(r.input_tokens).toBeGreaterThan(0);
    }
    // Charges in the log add up to what the wallet lost.
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    const spent = data.reduce((sum, r) => sum + Math.round(Number(r.cost_usd) * 1e9), 0);
    expect(BigInt(spent)).toBe(wallet.captured);
  });

  it('filters by status, model, key and request id, and pages with a cursor', async () => {
    expect((await logs('?status=rejected')).data).toHaveLength(2);
    expect((await logs('?status=success,error')).data).toHaveLength(3);
    expect((await logs('?model=nope')).data).toHaveLength(1);
    expect((await logs(`?key_id=${keyId}`)).data).toHaveLength(5);
    const one = (await logs()).data[0]!;
    expect((await logs(`?request_id=${one.request_id}`)).data.map((r) => r.id)).toEqual([one.id]);
    const first = await logs('?limit=2');
    expect(first.data).toHaveLength(2);
    const second = await logs(`?limit=2&cursor=${first.next_cursor}`);
    const third = await logs(`?limit=2&cursor=${second.next_cursor}`);
    expect(third.next_cursor).toBeNull();
    expect([...first.data, ...second.data, ...third.data].map((r) => r.id)).toEqual((await logs()).data.map((r) => r.id));
    expect((await logs('?from=1&to=2')).data).toHaveLength(0);
    expect((await h.t.admin('GET', `/accounts/${accountId}/logs?status=bogus`)).statusCode).toBe(400);
  });

  it('exports CSV with the spec columns, capped at 10,000 rows with x-truncated', async () => {
    const csv = await h.t.admin('GET', `/accounts/${accountId}/logs.csv`);
    expect(csv.headers['content-type']).toMatch(/text\/csv/);
    const lines = csv.body.trim().split('\n');
    expect(lines[0]).toBe(CSV_COLUMNS.join(','));
    expect(lines).toHaveLength(6);
    expect(csv.headers['x-truncated']).toBeUndefined();

    const other = await h.t.accountWithKey();
    await h.t.db.sql.query(
      `INSERT INTO call_log (id, account_id, key_id, model, endpoint, status, input_tokens, output_tokens, cached_tokens, cost, latency_ms,
                             request_id, submitted_at, created_at, attempts_count, result_urls)
       SELECT gen_random_uuid(), $1, NULL, 'm', 'chat-completions', 'success', 1, 1, 0, 1, 1, 'req_' || g, $2, $2, 1, ARRAY['https://a/1', 'https://a/2']
         FROM generate_series(1, 10001) AS g`,
      [other.accountId, Math.floor(Date.now() / 1000) - 10],
    );
    const big = await h.t.admin('GET', `/accounts/${other.accountId}/logs.csv`);
    expect(big.headers['x-truncated']).toBe('true');
    const bigLines = big.body.trim().split('\n');
    expect(bigLines).toHaveLength(10_001);
    expect(bigLines[1]).toContain('https://a/1|https://a/2');
  });

  it('GET /api/v1/usage counts every final outcome once, rejected included', async () => {
    const response = await fetch(`${h.baseUrl}/api/v1/usage`, { headers: { authorization: `Bearer ${openai.apiKey}` } });
    const body = (await response.json()) as { by_model: Array<{ model: string }> };
    expect(body).toMatchObject({ object: 'usage', scope: 'account', total_requests: 5, success_requests: 2, error_requests: 1, rejected_requests: 2 });
    expect(body.by_model.map((m: { model: string }) => m.model).sort()).toEqual(['chat-model', 'nope']);
  });

  it('a model name no event store can hold as sent (U+0000, an unpaired surrogate) still gets its rejected row, and calls sharing its append succeed', async () => {
    const other = await h.t.accountWithKey();
    const post = (model: string) =>
      fetch(`${h.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${other.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      });
    const answers = await Promise.all([post('chat-model'), post('bad\ud800model'), post('nul\u0000model'), post('chat-model')]);
    expect(answers.map((a) => a.status)).toEqual([200, 400, 400, 200]);
    expect(((await answers[1]!.json()) as { error: { code: string } }).error.code).toBe('model_not_found');
    await h.t.gateway.runner.catchUpToHead();
    const { data } = (await (await h.t.admin('GET', `/accounts/${other.accountId}/logs`)).json()) as { data: Row[] };
    expect(data.map((r) => [r.status, r.model]).sort()).toEqual([
      ['rejected', 'bad\ufffdmodel'],
      ['rejected', 'nul\ufffdmodel'],
      ['success', 'chat-model'],
      ['success', 'chat-model'],
    ]);
  });
});

