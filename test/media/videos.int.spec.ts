import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { videoTokens, type Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { api, ledgerEvents, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

const MODELS = ['vid-tiered', 'vid-flat', 'vid-lite', 'vid-token'];

function config(sim: Simulator): GatewayConfig {
  return {
    models: [
      mediaModel({ id: 'vid-tiered', kind: 'video', price: { per_second: { '720p': '0.10', '1080p': '0.20' } }, video: { default_resolution: '720p', resolution_required: false, video_mode: false, token_billing: false } }),
      mediaModel({ id: 'vid-flat', kind: 'video', price: { per_second: '0.15' } }),
      mediaModel({ id: 'vid-lite', kind: 'video', price: { per_second: '0.05' }, video: { resolutions: ['720p', '1080p'], resolution_required: true, video_mode: false, token_billing: false } }),
      mediaModel({ id: 'vid-token', kind: 'video', price: { per_second: '0.10', per_1m_completion_tokens: '2.00' }, video: { resolution_required: false, video_mode: true, token_billing: true } }),
      mediaModel({ id: 'vid-nochannel', kind: 'video', price: { per_second: '0.10' } }),
    ],
    channels: [mediaChannel(sim, 'vid-a', 'videos', MODELS, 0), mediaChannel(sim, 'vid-b', 'videos', MODELS, 1)],
  };
}

let h: SimulatedGateway;
let http: ReturnType<typeof api>;
beforeAll(async () => {
  h = await startTaskHarness(config);
  http = api(h);
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');
const text = (t: string) => [{ type: 'text', text: t }];
const submits = () => h.sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/api/v3/contents/generations/tasks'));
const ended = (b: Record<string, unknown>) => !['queued', 'running'].includes(String(b.status));

async function submit(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await http.post('/v1/videos/generations', key, body, headers);
  return { response, body: (await response.json()) as Record<string, unknown> };
}

describe('POST /v1/videos/generations', () => {
  it('answers queued at once, reserves 12 s at the default tier, settles on the delivered seconds, and shows the spec fields', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'vid-tiered', content: text('a red cube') });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(Object.keys(body).sort()).toEqual(['created_at', 'id', 'model', 'status']);
    expect(body).toMatchObject({ status: 'queued', model: 'vid-tiered' });
    expect(String(body.id)).toMatch(/^[0-9a-f-]{36}$/);
    // The worst case is held while the task runs: 12 s × 0.10.
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('1.20'));

    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done).toMatchObject({ id: body.id, status: 'succeeded', model: 'vid-tiered', created_at: body.created_at, duration: 5, duration_sec: 5, framespersecond: 24 });
    expect(done.updated_at as number).toBeGreaterThanOrEqual(done.created_at as number);
    expect((done.content as { video_url: string }).video_url).toBe(done.video_url);
    expect(done.expires_at).toEqual(expect.any(Number));
    expect(done.usage).toEqual({ completion_tokens: videoTokens('720p', 5), total_tokens: videoTokens('720p', 5) });
    expect(done).not.toHaveProperty('error');
    expect(done).not.toHaveProperty('progress');
    // Sent upstream: the request's own fields with the channel's model id.
    expect(submits()[0]!.body).toEqual({ model: 'vid-tiered-upstream', content: text('a red cube') });

    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - parseUsd('0.50'));
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ model: 'vid-tiered', status: 'success', task_id: body.id, unit_count: 5, unit_type: 'second', cost_usd: '0.50', submitted_at: body.created_at });
    expect(row!.result_urls).toEqual([done.video_url]);
    expect(row!.result_expires_at).toBe(done.expires_at);
    const types = (await ledgerEvents(h, accountId)).map((e) => e.type);
    expect(types.slice(-2)).toEqual(['FundsReserved', 'HoldSettled']);
  });

  it('prices by the resolution tier, echoes only what was sent (not seed -1 nor ratio adaptive), and bills fractional seconds', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { body } = await submit(key, {
      model: 'vid-tiered',
      content: text('a slow pan [[sim:task_duration_ms:4200]]'),
      duration: 5,
      resolution: '1080p',
      seed: -1,
      ratio: 'adaptive',
      watermark: false,
      return_last_frame: true,
      frames: 121,
    });
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('1.00'));
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done).toMatchObject({ status: 'succeeded', resolution: '1080p', frames: 121, duration: 4, duration_sec: 4.2 });
    expect(done).not.toHaveProperty('seed');
    expect(done).not.toHaveProperty('ratio');
    expect(done).not.toHaveProperty('watermark');
    expect((done.content as { last_frame_url?: string }).last_frame_url).toMatch(/\.png$/);
    // 4.2 s × 0.20, within the 5 s reservation.
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - parseUsd('0.84'));

    const { body: seeded } = await submit(key, { model: 'vid-flat', content: text('x'), seed: 7, ratio: '16:9' });
    const second = await http.until(`/v1/videos/generations/${seeded.id}`, key, ended);
    expect(second).toMatchObject({ seed: 7, ratio: '16:9' });
  });

  it('reports progress while running, with updated_at equal to created_at until the end', async () => {
    const { key } = await h.t.accountWithKey();
    const { body } = await submit(key, { model: 'vid-flat', content: text('slowly [[sim:task_progress,task_polls:40]]') });
    const running = await http.until(`/v1/videos/generations/${body.id}`, key, (b) => b.status === 'running' && typeof b.progress === 'number' && (b.progress as number) > 0);
    expect(running.updated_at).toBe(running.created_at);
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done.status).toBe('succeeded');
    expect(done).not.toHaveProperty('progress');
  });

  it.each([
    ['task_failed', 'failed'],
    ['task_expired', 'expired'],
    ['task_cancelled', 'cancelled'],
  ])('refunds in full when the upstream task ends %s', async (scenario, status) => {
    const { accountId, key } = await h.t.accountWithKey();
    const { body } = await submit(key, { model: 'vid-flat', content: text(`x [[sim:${scenario}]]`), duration: 6 });
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done.status).toBe(status);
    expect(done.error).toEqual({ code: expect.any(String), message: expect.any(String) });
    expect(done).not.toHaveProperty('video_url');
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.balance).toBe(GRANT);
    expect(w.held).toBe(0n);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'error', task_id: body.id, cost_usd: '0.00' });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-1)).toEqual(['HoldReleased']);
  });

  it('bills a reference video per token in the token family: resolution required, reserve (duration + 30 s), settle on completion tokens', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const content = [...text('continue it'), { type: 'video_url', video_url: { url: 'https://example.com/in.mp4' }, role: 'reference_video' }];
    const missing = await submit(key, { model: 'vid-token', content, duration: 5 });
    expect(missing.response.status).toBe(400);
    expect(missing.body).toMatchObject({ error: { code: 'invalid_request', type: 'invalid_request_error' } });
    expect(String((missing.body.error as { message: string }).message)).toMatch(/resolution/);
    expect(submits()).toHaveLength(0);

    const { body } = await submit(key, { model: 'vid-token', content, duration: 5, resolution: '720p' });
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('3.50'));
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    const tokens = videoTokens('720p', 5);
    expect(done.usage).toEqual({ completion_tokens: tokens, total_tokens: tokens });
    const cost = (BigInt(tokens) * parseUsd('2.00') + 999_999n) / 1_000_000n;
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - cost);
    const row = (await logRows(h, accountId)).find((r) => r.status === 'success');
    expect(row).toMatchObject({ unit_type: 'token', unit_count: tokens, output_tokens: tokens });
  });

  it('refuses what the spec refuses with a 400 and no upstream task', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const refs = Array.from({ length: 11 }, (_, i) => ({ type: 'image_url', image_url: { url: `https://example.com/${i}.png` }, role: 'reference_image' }));
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ model: 'vid-flat', content: [] }, /content/],
      [{ model: 'vid-flat', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }, /text/],
      [{ model: 'vid-flat', content: [...text('a'), ...text('b')] }, /exactly one/],
      [{ model: 'vid-flat', content: [...text('a'), ...refs] }, /at most 10/],
      [{ model: 'vid-lite', content: text('a') }, /resolution/],
      [{ model: 'vid-lite', content: text('a'), resolution: '480p' }, /720p, 1080p/],
      [{ model: 'vid-tiered', content: text('a'), resolution: '4k' }, /priced for/],
      [{ model: 'vid-flat', content: [...text('a'), { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }], portrait_auth: true }, /http\(s\)/],
      [{ model: 'vid-flat', content: [...text('a'), { type: 'video_url', video_url: { url: 'https://e.com/v.mp4' } }], video_mode: 'extend' }, /video_mode/],
      [{ model: 'vid-token', content: text('a'), video_mode: 'extend' }, /reference video/],
      [{ model: 'vid-flat', content: text('a'), duration: -1 }, /duration/],
    ];
    for (const [body, message] of cases) {
      const { response, body: answer } = await submit(key, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      expect((answer.error as { message: string }).message).toMatch(message);
    }
    const unknown = await submit(key, { model: 'no-such-video', content: text('a') });
    expect(unknown.response.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: { code: 'model_not_found' } });
    const noChannel = await submit(key, { model: 'vid-nochannel', content: text('a') });
    expect(noChannel.response.status).toBe(503);
    expect(noChannel.body).toMatchObject({ error: { code: 'no_channel_available' } });
    expect(submits()).toHaveLength(0);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT);
    // Every refusal is a rejected row at cost 0.
    const rows = await logRows(h, accountId);
    expect(rows.length).toBe(cases.length + 2);
    expect(rows.every((r) => r.status === 'rejected' && r.cost_usd === '0.00')).toBe(true);
  });

  it('gives 402 at submit with no upstream task when the worst case is above the balance', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    // 300 s × 0.15 = 45 USD > 40.44.
    const { response, body } = await submit(key, { model: 'vid-flat', content: text('long'), duration: 300 });
    expect(response.status).toBe(402);
    expect(body).toMatchObject({ error: { code: 'quota_exceeded', type: 'insufficient_quota' } });
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(submits()).toHaveLength(0);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'rejected', error_code: 'quota_exceeded' });
  });

  it('settles past the 12 s reservation when no duration was sent; the result stays readable at a negative balance', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    // 300 s delivered × 0.15 = 45 USD, from a 1.80 USD hold on a 40.44 USD grant.
    const { body } = await submit(key, { model: 'vid-flat', content: text('a long one [[sim:task_duration_ms:300000]]') });
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done).toMatchObject({ status: 'succeeded', duration: 300 });
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.balance).toBe(GRANT - parseUsd('45'));
    // Polls and lists are free; a new submission is refused at authentication.
    expect((await http.get(`/v1/videos/generations/${body.id}`, key)).status).toBe(200);
    expect((await http.get('/v1/videos/generations', key)).status).toBe(200);
    const next = await submit(key, { model: 'vid-flat', content: text('again') });
    expect(next.response.status).toBe(402);
  });

  it('fails over on a 5xx, passes an upstream 4xx through with nothing billed and no visible task', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/vid-a' }, 'http_503');
    const { response, body } = await submit(key, { model: 'vid-flat', content: text('x') });
    expect(response.status).toBe(200);
    expect(submits().map((r) => r.path.split('/')[1])).toEqual(['vid-a', 'vid-b']);
    await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    const [ok] = await logRows(h, accountId);
    expect(ok).toMatchObject({ attempts_count: 2, status: 'success' });

    h.sim.reset();
    h.sim.enqueueFor({ pathPrefix: '/vid-a' }, 'http_400');
    const refused = await submit(key, { model: 'vid-flat', content: text('x') });
    expect(refused.response.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { message: expect.any(String) } });
    expect(submits()).toHaveLength(1);
    const list = (await (await http.get('/v1/videos/generations', key)).json()) as { data: unknown[] };
    expect(list.data).toHaveLength(1);
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.held).toBe(0n);
    const rows = await logRows(h, accountId);
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.status === 'error')).toMatchObject({ error_code: 'invalid_request', cost_usd: '0.00', attempts_count: 1 });
  });

  it('replays an Idempotency-Key: the same task id, one upstream task, one reservation', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'vid-flat', content: text('once'), duration: 4 };
    const first = await submit(key, body, { 'idempotency-key': 'video-1' });
    const again = await submit(key, body, { 'idempotency-key': 'video-1' });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(submits()).toHaveLength(1);
    await http.until(`/v1/videos/generations/${first.body.id}`, key, ended);
    const reserved = (await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved');
    expect(reserved).toHaveLength(1);
    const other = await submit(key, { ...body, duration: 5 }, { 'idempotency-key': 'video-1' });
    expect(other.response.status).toBe(409);
    expect(other.body).toMatchObject({ error: { code: 'idempotency_key_reuse' } });
  });
});

describe('GET /v1/videos/generations', () => {
  it('shows tasks to their owner only, newest first, filtered by status', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    const ok = (await submit(a.key, { model: 'vid-flat', content: text('one') })).body;
    const bad = (await submit(a.key, { model: 'vid-flat', content: text('two [[sim:task_failed]]') })).body;
    await http.until(`/v1/videos/generations/${ok.id}`, a.key, ended);
    await http.until(`/v1/videos/generations/${bad.id}`, a.key, ended);
    await h.t.gateway.runner.catchUpToHead();

    const foreign = await http.get(`/v1/videos/generations/${ok.id}`, b.key);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ error: { code: 'not_found' } });
    expect(foreign.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect((await http.get('/v1/videos/generations/00000000-0000-0000-0000-000000000000', a.key)).status).toBe(404);

    const all = (await (await http.get("/v1/videos/generations", a.key)).json()) as { data: Array<{ id: string; status: string; created_at: number }> };
    // Newest first (ties within a second by id, descending).
    const order = all.data.map((t) => [t.created_at, t.id] as const);
    expect(order).toEqual([...order].sort((x, y) => y[0] - x[0] || (y[1] > x[1] ? 1 : -1)));
    expect(new Set(all.data.map((t) => t.id))).toEqual(new Set([ok.id, bad.id]));
    const succeeded = (await (await http.get('/v1/videos/generations?status=succeeded', a.key)).json()) as { data: Array<{ id: string }> };
    expect(succeeded.data.map((t) => t.id)).toEqual([ok.id]);
    const both = (await (await http.get('/v1/videos/generations?status=failed,succeeded&limit=1', a.key)).json()) as { data: unknown[] };
    expect(both.data).toHaveLength(1);
    expect(((await (await http.get('/v1/videos/generations?status=all', a.key)).json()) as { data: unknown[] }).data).toHaveLength(2);
    expect(((await (await http.get('/v1/videos/generations?limit=500', a.key)).json()) as { data: unknown[] }).data).toHaveLength(2);
    const invalid = await http.get('/v1/videos/generations?status=done', a.key);
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ error: { code: 'invalid_request' } });
    expect(((await (await http.get('/v1/videos/generations', b.key)).json()) as { data: unknown[] }).data).toHaveLength(0);
  });
});
