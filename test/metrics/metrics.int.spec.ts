import OpenAI from 'openai';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { chatConfig } from '../chat/support';
import { limiterOptions, setLimits } from '../limits/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { Scrape } from '../support/prometheus';

/** The chat catalogue (chat-model on cc-a, then cc-b) with an images channel for img-model. */
function config(sim: Simulator): GatewayConfig {
  const chat = chatConfig(sim);
  return {
    ...chat,
    channels: [
      ...chat.channels,
      { id: 'img-a', protocol: 'images', base_url: `${sim.url}/img-a`, api_key: 'key-img-a', group: 'default', priority: 0, weight: 1, models: ['img-model'], tools: [] },
    ],
  };
}

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startSimulatedGateway(config, { chatTimeoutMs: 20_000, rateLimits: limiterOptions() });
});
afterAll(() => h.close());

async function scrape(): Promise<Scrape> {
  const response = await fetch(`${h.baseUrl}/metrics`);
  expect(response.status).toBe(200);
  return new Scrape(await response.text());
}

/** Everything this process queued is appended and every projection has applied it. */
async function settled() {
  await h.t.gateway.ledger.idle();
  await h.t.gateway.runner.catchUpToHead();
}

const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
const ask = (key: string, content = 'hello') => openai(key).chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content }] });
const image = (key: string, idempotencyKey: string) =>
  fetch(`${h.baseUrl}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ model: 'img-model', prompt: 'a boat' }),
  });

const chat = { endpoint: 'chat-completions', model: 'chat-model' };

describe('GET /metrics after a scripted workload', () => {
  it('counts calls, attempts, failovers, refusals, replays, tokens and cost as the call log has them, with bounded labels', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    await setLimits(h.t, b.accountId, 1, null);

    // A: a call, a stream, a failover, a model the catalogue does not have, an image and its replay, an unknown path.
    const usages = [(await ask(a.key)).usage!];
    const stream = await openai(a.key).chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'stream it' }], stream: true, stream_options: { include_usage: true } });
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    h.sim.enqueueFor({ apiKey: 'key-cc-a' }, 'http_500');
    usages.push((await ask(a.key, 'fail over')).usage!);
    const unknown = await openai(a.key).chat.completions.create({ model: 'my-own-model-text', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ status: 400, error: { code: 'model_not_found' } });
    const first = await image(a.key, 'metrics-1');
    expect(first.status).toBe(200);
    await first.text();
    const replay = await image(a.key, 'metrics-1');
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    await replay.text();
    expect((await fetch(`${h.baseUrl}/v1/no-such-thing`)).status).toBe(404);
    // B: one request a minute: the second is the account's own 429.
    usages.push((await ask(b.key)).usage!);
    const refused = await ask(b.key).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 429, error: { code: 'rate_limit_exceeded' } });

    // A call in flight holds money: the open hold is seen while it waits for its first byte (every
    // earlier hold is closed in the read model first).
    await settled();
    h.sim.enqueue('slow_first_byte:2500');
    const slow = ask(a.key, 'slowly');
    for (let i = 0; i < 250; i++) {
      const [row] = await h.t.db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM holds WHERE status = 'open'`);
      if (Number(row!.n) === 1) break;
      await sleep(10);
    }
    const during = await scrape();
    expect(during.value('gateway_holds_open')).toBe(1);
    expect(during.value('gateway_holds_open_expired')).toBe(0);
    expect(during.value('gateway_holds_open_oldest_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(during.value('gateway_holds_open_oldest_age_seconds')).toBeLessThan(60);
    usages.push((await slow).usage!);
    await settled();
    await sleep(1100); // scrape-time reads are reused for a second

    const m = await scrape();
    expect(m.value('gateway_holds_open')).toBe(0);
    expect(m.value('gateway_holds_open_oldest_age_seconds')).toBe(0);

    // Calls by endpoint, catalogue model, outcome and code: the client's own model text is `unknown`.
    expect(m.value('gateway_calls_total', { ...chat, outcome: 'success', code: 'none' })).toBe(5);
    // A 429 of the account's limits comes before the body is parsed: its model is read from the body for its row.
    expect(m.value('gateway_calls_total', { ...chat, outcome: 'rejected', code: 'rate_limit_exceeded' })).toBe(1);
    expect(m.value('gateway_calls_total', { endpoint: 'chat-completions', model: 'unknown', outcome: 'rejected', code: 'model_not_found' })).toBe(1);
    expect(m.value('gateway_calls_total', { endpoint: 'images.generations', model: 'img-model', outcome: 'success', code: 'none' })).toBe(1);
    expect(m.text).not.toContain('my-own-model-text');
    for (const id of [a.accountId, a.keyId, b.accountId, b.keyId]) expect(m.text).not.toContain(id);

    // Every call-log row is one call of the metric, and the tokens and cost are the rows'.
    const rows = await h.t.db.sql.query<{ endpoint: string; model: string; status: string; error_code: string | null; n: number; input: string; output: string; cost: string }>(
      `SELECT endpoint, model, status, error_code, count(*)::int AS n, sum(input_tokens)::text AS input, sum(output_tokens)::text AS output, sum(cost)::text AS cost
         FROM call_log GROUP BY 1, 2, 3, 4`,
    );
    const catalogue = new Set(h.t.gateway.registry.models.map((model) => model.id));
    const label = (model: string) => (catalogue.has(model) ? model : 'unknown');
    const calls = m.all('gateway_calls_total');
    expect(calls.reduce((n, s) => n + s.value, 0)).toBe(rows.reduce((n, r) => n + Number(r.n), 0));
    for (const row of rows)
      expect(m.value('gateway_calls_total', { endpoint: row.endpoint, model: label(row.model), outcome: row.status, code: row.error_code ?? 'none' })).toBe(Number(row.n));
    const byModel = (model: string, column: 'input' | 'output' | 'cost') => rows.filter((r) => r.model === model).reduce((n, r) => n + BigInt(r[column]), 0n);
    expect(m.value('gateway_tokens_total', { model: 'chat-model', kind: 'input' })).toBe(usages.reduce((n, u) => n + u.prompt_tokens, 0));
    expect(m.value('gateway_tokens_total', { model: 'chat-model', kind: 'output' })).toBe(usages.reduce((n, u) => n + u.completion_tokens, 0));
    expect(m.value('gateway_tokens_total', { model: 'chat-model', kind: 'input' })).toBe(Number(byModel('chat-model', 'input')));
    for (const model of ['chat-model', 'img-model']) {
      expect(byModel(model, 'cost')).toBeGreaterThan(0n);
      expect(m.value('gateway_cost_usd_total', { model })).toBeCloseTo(Number(byModel(model, 'cost')) / 1e9, 12);
    }

    // Upstream attempts by channel and result, and the one failover.
    expect(m.value('gateway_upstream_attempts_total', { channel: 'cc-a', result: 'ok' })).toBe(4);
    expect(m.value('gateway_upstream_attempts_total', { channel: 'cc-a', result: 'server_error' })).toBe(1);
    expect(m.value('gateway_upstream_attempts_total', { channel: 'cc-b', result: 'ok' })).toBe(1);
    expect(m.value('gateway_upstream_attempts_total', { channel: 'img-a', result: 'ok' })).toBe(1);
    expect(m.all('gateway_upstream_failovers_total')).toEqual([{ name: 'gateway_upstream_failovers_total', labels: { channel: 'cc-a', cause: 'server_error' }, value: 1 }]);

    // Refusals and replays.
    expect(m.value('gateway_rate_limit_refusals_total', { limit: 'requests' })).toBe(1);
    expect(m.value('gateway_rate_limit_refusals_total', { limit: 'concurrency' })).toBe(0);
    expect(m.value('gateway_idempotency_replays_total', { route: '/v1/images/generations' })).toBe(1);

    // Requests by route pattern and status.
    const http = (method: string, route: string, status: string) => m.value('gateway_http_requests_total', { method, route, status });
    expect(http('POST', '/v1/chat/completions', '200')).toBe(5);
    expect(http('POST', '/v1/chat/completions', '429')).toBe(1);
    expect(http('POST', '/v1/chat/completions', '400')).toBe(1);
    expect(http('POST', '/v1/images/generations', '200')).toBe(2);
    expect(http('GET', 'unmatched', '404')).toBe(1);
    expect(http('POST', '/admin/v1/accounts', '201')).toBe(2);
    // The route's pattern, never its URL (which names an account).
    expect(http('POST', '/admin/v1/accounts/:id/keys', '201')).toBe(2);
    expect(m.value('gateway_http_request_duration_seconds_count', { method: 'POST', route: '/v1/chat/completions' })).toBe(7);

    // Latency histograms: every chat-model call has a duration (the refused one too); the five answered a
    // first byte, an upstream time and an overhead; total = upstream + overhead for each.
    expect(m.value('gateway_call_duration_seconds_count', chat)).toBe(6);
    expect(m.value('gateway_call_first_byte_seconds_count', chat)).toBe(5);
    expect(m.value('gateway_call_upstream_seconds_count', chat)).toBe(5);
    expect(m.value('gateway_call_overhead_seconds_count', chat)).toBe(5);
    const sum = (name: string) => m.value(`${name}_sum`, chat)!;
    // The slow call alone waited 2.5 s for its upstream (timers may fire a little early).
    expect(sum('gateway_call_upstream_seconds')).toBeGreaterThanOrEqual(2.4);
    expect(sum('gateway_call_duration_seconds')).toBeGreaterThanOrEqual(sum('gateway_call_upstream_seconds') + sum('gateway_call_overhead_seconds') - 1e-6);
    expect(m.value('gateway_call_duration_seconds_bucket', { ...chat, le: '+Inf' })).toBe(6);

    // Event store appends: every command of the log went through a timed append.
    const [events] = await h.t.db.sql.query<{ commands: number }>(`SELECT count(DISTINCT metadata->>'command_id')::int AS commands FROM events`);
    expect(m.value('gateway_event_store_append_commands_sum', { engine: h.t.gateway.storage.store.engine })).toBe(Number(events!.commands));
    expect(m.value('gateway_event_store_append_seconds_count', { engine: h.t.gateway.storage.store.engine })).toBe(
      m.value('gateway_event_store_append_commands_count', { engine: h.t.gateway.storage.store.engine }),
    );

    // Node's process metrics come with every scrape.
    expect(m.has('process_cpu_user_seconds_total')).toBe(true);
    expect(m.has('nodejs_eventloop_lag_seconds')).toBe(true);
    expect(m.has('nodejs_heap_size_used_bytes')).toBe(true);
  });

  it('shows each projection at the head, then behind by the events appended while its runner is stopped', async () => {
    const { key } = await h.t.accountWithKey();
    await settled();
    await sleep(1100);
    const names = h.t.gateway.runner.projections.map((p) => p.name);
    const atHead = await scrape();
    for (const projection of names) {
      expect(atHead.value('gateway_projection_lag_events', { projection })).toBe(0);
      expect(atHead.value('gateway_projection_lag_seconds', { projection })).toBe(0);
      expect(atHead.value('gateway_projection_parked_events', { projection })).toBe(0);
    }

    const count = async () => Number((await h.t.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM events'))[0]!.n);
    await h.t.gateway.runner.stop();
    try {
      const before = await count();
      await ask(key);
      await h.t.gateway.ledger.idle();
      const appended = (await count()) - before;
      expect(appended).toBeGreaterThanOrEqual(2); // the hold and its settlement
      await sleep(1100);
      const behind = await scrape();
      for (const projection of names) {
        expect(behind.value('gateway_projection_lag_events', { projection })).toBe(appended);
        expect(behind.value('gateway_projection_lag_seconds', { projection })).toBeGreaterThan(0);
      }
    } finally {
      h.t.gateway.runner.start(() => {});
    }
  });

  it('counts a stream the client left as a 499 of its route and an interrupted call', async () => {
    const { key } = await h.t.accountWithKey();
    await sleep(1100);
    const before = await scrape();
    h.sim.enqueue('slow_stream:200');
    const abort = new AbortController();
    const response = await fetch(`${h.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-model', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight' }] }),
      signal: abort.signal,
    });
    // Three reads (events come 200 ms apart), then the client leaves.
    const reader = response.body!.getReader();
    for (let i = 0; i < 3; i++) await reader.read();
    abort.abort();
    await reader.closed.catch(() => {});
    // The relay notices at its next write, settles on what was delivered and records the call.
    for (let i = 0; i < 300 && !(await h.t.db.sql.query(`SELECT 1 FROM call_log WHERE error_code = 'client_disconnected'`)).length; i++) {
      await h.t.gateway.ledger.idle();
      await h.t.gateway.runner.catchUpToHead();
      await sleep(20);
    }
    await sleep(1100);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => (after.value(name, labels) ?? 0) - (before.value(name, labels) ?? 0);
    expect(delta('gateway_http_requests_total', { method: 'POST', route: '/v1/chat/completions', status: '499' })).toBe(1);
    expect(delta('gateway_http_requests_total', { method: 'POST', route: '/v1/chat/completions', status: '200' })).toBe(0);
    expect(delta('gateway_calls_total', { ...chat, outcome: 'interrupted', code: 'client_disconnected' })).toBe(1);
    expect(delta('gateway_call_first_byte_seconds_count', chat)).toBe(1);
    // The first byte is the first event, and the stream's upstream time runs to its end (the client
    // left at least 400 ms after that first event).
    expect(delta('gateway_call_first_byte_seconds_sum', chat)).toBeLessThan(delta('gateway_call_duration_seconds_sum', chat) - 0.3);
    expect(delta('gateway_call_upstream_seconds_sum', chat)).toBeGreaterThan(delta('gateway_call_first_byte_seconds_sum', chat) + 0.2);
    expect(delta('gateway_upstream_attempts_total', { channel: 'cc-a', result: 'ok' })).toBe(1);
  });
});
