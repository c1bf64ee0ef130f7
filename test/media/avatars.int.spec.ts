import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { MediaProbe } from '../../src/media-check/media-probe';
import type { Scenario, Simulator } from '../../src/simulator';
import { startMediaServer, type MediaServer } from '../media-check/media-server';
import type { SimulatedGateway } from '../support/gateway';
import { api, ledgerEvents, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

// Avatars over HTTP against the simulator: creation (fee held, settled when ready, released on failure),
// the spec's record, owner-only reads, delete rules, presets, Errors rule 8, idempotent creation, and the
// source probed (real small files on a local server; loopback allowed for this gateway's probe).

const fixture = (name: string) => readFileSync(new URL(`../media-check/fixtures/${name}`, import.meta.url));
const FILES = {
  'photo.jpg': { body: fixture('photo-100x100.jpg'), type: 'image/jpeg' },
  'animated.webp': { body: fixture('animated-32x32.webp'), type: 'image/webp' },
  'clip.mp4': { body: fixture('clip-faststart.mp4'), type: 'video/mp4' },
} as const;

function config(sim: Simulator): GatewayConfig {
  return {
    models: [
      mediaModel({ id: 'avatar-std', kind: 'avatar', price: { per_call: '2.00' } }),
      mediaModel({ id: 'avatar-alt', kind: 'avatar', price: { per_call: '3.00' } }),
      mediaModel({ id: 'avatar-gold', kind: 'avatar', price: { per_call: '50.00' } }),
      mediaModel({ id: 'avatar-nochannel', kind: 'avatar', price: { per_call: '1.00' } }),
      mediaModel({ id: 'vid-flat', kind: 'video', price: { per_second: '0.15' } }),
    ],
    channels: [mediaChannel(sim, 'av-a', 'avatars', ['avatar-std', 'avatar-alt', 'avatar-gold']), mediaChannel(sim, 'vid-a', 'videos', ['vid-flat'])],
    presets: { voices: [], avatars: [{ id: 'preset-anna', name: 'Anna' }, { id: 'preset-ben', name: 'Ben' }] },
  } as GatewayConfig;
}

let media: MediaServer;
let h: SimulatedGateway;
let http: ReturnType<typeof api>;
beforeAll(async () => {
  media = await startMediaServer(FILES);
  h = await startTaskHarness(config, { mediaProbe: new MediaProbe({ allowPrivateAddresses: true, timeoutMs: 3000 }) });
  http = api(h);
});
afterAll(async () => {
  await h.close();
  await media.close();
});
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');
const photo = () => `${media.origin}/photo.jpg`;
const submits = () => h.sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/api/v3/contents/generations/tasks'));
const settledAvatar = (b: Record<string, unknown>) => b.status !== 'pending';

async function create(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await http.post('/v1/videos/avatars', key, body, headers);
  return { response, body: (await response.json()) as Record<string, unknown> };
}
const remove = (key: string, id: string) => fetch(`${h.baseUrl}/v1/videos/avatars/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });

describe('POST /v1/videos/avatars', () => {
  it('answers pending, holds the per_call fee, settles it once the upstream made the avatar ready', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    // Pending long enough for the hold to be seen (the poller runs every 40 ms here).
    h.sim.enqueueFor({ protocol: 'avatars' }, 'task_polls:20');
    const { response, body } = await create(key, { name: 'Host Anna', source_url: photo() });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(Object.keys(body).sort()).toEqual(['created_at', 'error', 'id', 'name', 'source_kind', 'status']);
    expect(body).toMatchObject({ name: 'Host Anna', source_kind: 'image', status: 'pending', error: null });
    expect(new Date(String(body.created_at)).toISOString()).toBe(body.created_at);
    // The available balance drops by the fee at once.
    const held = await h.t.gateway.ledger.wallet(accountId);
    expect(held.held).toBe(parseUsd('2.00'));
    expect(held.balance).toBe(GRANT);
    expect(submits().map((r) => r.body)).toEqual([{ model: 'avatar-std-upstream', name: 'Host Anna', source_url: photo(), source_kind: 'image' }]);

    const ready = await http.until(`/v1/videos/avatars/${body.id}`, key, settledAvatar);
    expect(ready).toEqual({ ...body, status: 'ready' });
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - parseUsd('2.00'));
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ model: 'avatar-std', status: 'success', task_id: body.id, unit_count: 1, unit_type: 'call', cost_usd: '2.00' });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-2)).toEqual(['FundsReserved', 'HoldSettled']);
  });

  it('takes a video source (probed as a source video) and a named avatar model at its own fee', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await create(key, { name: 'Moving', source_url: `${media.origin}/clip.mp4`, source_kind: 'video', model: 'avatar-alt' });
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ source_kind: 'video', status: 'pending' });
    expect(submits()[0]!.body).toMatchObject({ model: 'avatar-alt-upstream', source_kind: 'video' });
    await http.until(`/v1/videos/avatars/${body.id}`, key, settledAvatar);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - parseUsd('3.00'));
  });

  it.each<[Scenario, string]>([
    ['task_failed', 'The avatar creation failed (simulated).'],
    ['task_expired', 'The task expired before it could finish (simulated).'],
    ['task_cancelled', 'The task was cancelled.'],
  ])('refunds the fee in full when the upstream task ends %s: the avatar is failed with the error text', async (scenario, message) => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ protocol: 'avatars' }, [scenario, 'task_polls:20']);
    const { body } = await create(key, { name: 'Doomed', source_url: photo() });
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('2.00'));
    const failed = await http.until(`/v1/videos/avatars/${body.id}`, key, settledAvatar);
    expect(failed).toMatchObject({ id: body.id, status: 'failed', error: message });
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT);
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-2)).toEqual(['FundsReserved', 'HoldReleased']);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'error', task_id: body.id, cost_usd: '0.00' });
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['an empty name', { name: '', source_url: 'https://x.test/a.jpg' }, /name/],
    ['a name over 20 characters', { name: 'abcdefghijklmnopqrstu', source_url: 'https://x.test/a.jpg' }, /name: must be at most 20 characters/],
    ['no name', { source_url: 'https://x.test/a.jpg' }, /name/],
    ['no source_url', { name: 'A' }, /source_url/],
    ['a non-http(s) source_url', { name: 'A', source_url: 'ftp://x.test/a.jpg' }, /source_url: must be a public http\(s\) URL/],
    ['a data URI', { name: 'A', source_url: 'data:image/png;base64,AAAA' }, /source_url/],
    ['another source_kind', { name: 'A', source_url: 'https://x.test/a.jpg', source_kind: 'gif' }, /source_kind/],
    ['a model that makes no avatars', { name: 'A', source_url: 'https://x.test/a.jpg', model: 'vid-flat' }, /not an avatar model/],
  ])('refuses %s with 400 invalid_request_error, nothing held or submitted', async (_name, body, message) => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body: answer } = await create(key, body);
    expect(response.status).toBe(400);
    expect(answer).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_request', message: expect.stringMatching(message) } });
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(submits()).toHaveLength(0);
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'rejected', error_code: 'invalid_request' });
  });

  it('counts a name in characters, not bytes: 20 emoji are a valid name', async () => {
    const { key } = await h.t.accountWithKey();
    const { response } = await create(key, { name: '😀'.repeat(20), source_url: photo() });
    expect(response.status).toBe(200);
  });

  it('refuses what the source probe finds against the limits (400 naming the limit), before any money moves', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const animated = await create(key, { name: 'A', source_url: `${media.origin}/animated.webp` });
    expect(animated.response.status).toBe(400);
    expect(animated.body).toMatchObject({ error: { code: 'invalid_request', message: expect.stringMatching(/^source_url: material image: .*still/) } });
    const notVideo = await create(key, { name: 'A', source_url: photo(), source_kind: 'video' });
    expect(notVideo.response.status).toBe(400);
    expect(notVideo.body).toMatchObject({ error: { message: expect.stringContaining('source video: must be mp4, mov') } });
    h.sim.enqueueFor({ protocol: 'avatars' }, 'task_polls:20');
    const missing = await create(key, { name: 'A', source_url: `${media.origin}/nothing.png` });
    // A URL nothing could be learnt from is passed on: the upstream decides.
    expect(missing.response.status).toBe(200);
    expect(submits()).toHaveLength(1);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('2.00'));
  });

  describe('Errors rule 8', () => {
    it('answers an unknown model 404 model_not_found and a model the key may not use 403 model_not_allowed', async () => {
      const { key } = await h.t.accountWithKey();
      const unknown = await create(key, { name: 'A', source_url: photo(), model: 'avatar-nope' });
      expect(unknown.response.status).toBe(404);
      expect(unknown.body).toMatchObject({ error: { code: 'model_not_found' } });
      expect(unknown.response.headers.get('x-gateway-trace')).toMatch(/^req_/);

      const limited = await h.t.accountWithKey({ allowed_models: ['vid-flat'] });
      const named = await create(limited.key, { name: 'A', source_url: photo(), model: 'avatar-std' });
      expect(named.response.status).toBe(403);
      expect(named.body).toMatchObject({ error: { code: 'model_not_allowed' } });
      const byDefault = await create(limited.key, { name: 'A', source_url: photo() });
      expect(byDefault.response.status).toBe(403);
      expect(byDefault.body).toMatchObject({ error: { code: 'model_not_allowed' } });
      expect(submits()).toHaveLength(0);
    });

    it('answers 401 without a valid key, 503 for a model without channel, 402 with no upstream task when the fee is above the balance', async () => {
      const noKey = await fetch(`${h.baseUrl}/v1/videos/avatars`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'A', source_url: photo() }) });
      expect(noKey.status).toBe(401);
      expect(await noKey.json()).toMatchObject({ error: { type: 'authentication_error', code: 'invalid_api_key' } });
      expect(noKey.headers.get('x-gateway-trace')).toMatch(/^req_/);

      const { accountId, key } = await h.t.accountWithKey();
      const noChannel = await create(key, { name: 'A', source_url: photo(), model: 'avatar-nochannel' });
      expect(noChannel.response.status).toBe(503);
      expect(noChannel.body).toMatchObject({ error: { code: 'no_channel_available' } });

      const dear = await create(key, { name: 'A', source_url: photo(), model: 'avatar-gold' });
      expect(dear.response.status).toBe(402);
      expect(dear.body).toMatchObject({ error: { code: 'quota_exceeded', type: 'insufficient_quota' } });
      expect(submits()).toHaveLength(0);
      expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
      const rows = await logRows(h, accountId);
      expect(rows.map((r) => r.error_code).sort()).toEqual(['no_channel_available', 'quota_exceeded']);
    });
  });

  it('replays an Idempotency-Key: the same avatar, Idempotency-Replayed, one upstream task, one hold', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { name: 'Once', source_url: photo() };
    const first = await create(key, body, { 'idempotency-key': 'avatar-1' });
    const again = await create(key, body, { 'idempotency-key': 'avatar-1' });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(submits()).toHaveLength(1);
    await http.until(`/v1/videos/avatars/${first.body.id}`, key, settledAvatar);
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(1);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - parseUsd('2.00'));
    const other = await create(key, { ...body, name: 'Twice' }, { 'idempotency-key': 'avatar-1' });
    expect(other.response.status).toBe(409);
    expect(other.body).toMatchObject({ error: { code: 'idempotency_key_reuse' } });
    const bad = await create(key, body, { 'idempotency-key': ' ' });
    expect(bad.response.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { code: 'invalid_idempotency_key' } });
  });
});

describe('GET and DELETE /v1/videos/avatars', () => {
  it('shows an avatar to its owner only; others and unknown ids get 404 not_found', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    const { body } = await create(a.key, { name: 'Mine', source_url: photo() });
    const foreign = await http.get(`/v1/videos/avatars/${body.id}`, b.key);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ error: { code: 'not_found' } });
    expect(foreign.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect((await http.get('/v1/videos/avatars/00000000-0000-0000-0000-000000000000', a.key)).status).toBe(404);
    expect((await http.get('/v1/videos/avatars/not-an-id', a.key)).status).toBe(404);
    expect((await remove(b.key, String(body.id))).status).toBe(404);
    const list = (await (await http.get('/v1/videos/avatars', b.key)).json()) as { avatars: unknown[] };
    expect(list.avatars).toEqual([]);
  });

  it('lists own avatars newest first with the record fields', async () => {
    const { key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ protocol: 'avatars' }, 'task_failed');
    const first = (await create(key, { name: 'First', source_url: photo() })).body;
    // Task times are whole seconds (the spec's created_at): within one second the order is the ids'.
    await new Promise((r) => setTimeout(r, 1100));
    const second = (await create(key, { name: 'Second', source_url: photo() })).body;
    await http.until(`/v1/videos/avatars/${first.id}`, key, settledAvatar);
    await http.until(`/v1/videos/avatars/${second.id}`, key, settledAvatar);
    const response = await http.get('/v1/videos/avatars', key);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const { avatars } = (await response.json()) as { avatars: Array<Record<string, unknown>> };
    expect(avatars.map((a) => a.name)).toEqual(['Second', 'First']);
    expect(avatars[0]).toEqual({ id: second.id, name: 'Second', source_kind: 'image', status: 'ready', error: null, created_at: second.created_at });
    expect(avatars[1]).toMatchObject({ id: first.id, status: 'failed', error: 'The avatar creation failed (simulated).' });
  });

  it('refuses to delete a pending avatar (400); deletes ready and failed ones, which then vanish; no money moves', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ protocol: 'avatars' }, 'task_polls:100000');
    const pending = (await create(key, { name: 'Slow', source_url: photo() })).body;
    const refused = await remove(key, String(pending.id));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: 'invalid_request', type: 'invalid_request_error', message: expect.stringContaining('pending') } });
    expect(refused.headers.get('x-gateway-trace')).toMatch(/^req_/);

    h.sim.enqueueFor({ protocol: 'avatars' }, 'task_failed');
    const failed = (await create(key, { name: 'Failed', source_url: photo() })).body;
    const ready = (await create(key, { name: 'Ready', source_url: photo() })).body;
    await http.until(`/v1/videos/avatars/${failed.id}`, key, settledAvatar);
    await http.until(`/v1/videos/avatars/${ready.id}`, key, settledAvatar);
    const before = await h.t.gateway.ledger.wallet(accountId);
    for (const avatar of [ready, failed]) {
      const gone = await remove(key, String(avatar.id));
      expect(gone.status).toBe(200);
      expect(await gone.json()).toEqual({ id: avatar.id, deleted: true });
      expect((await http.get(`/v1/videos/avatars/${avatar.id}`, key)).status).toBe(404);
      expect((await remove(key, String(avatar.id))).status).toBe(404);
    }
    const { avatars } = (await (await http.get('/v1/videos/avatars', key)).json()) as { avatars: Array<{ id: string }> };
    expect(avatars.map((a) => a.id)).toEqual([pending.id]);
    expect(await h.t.gateway.ledger.wallet(accountId)).toEqual(before);
  });

  it('lists the config presets at /presets', async () => {
    const { key } = await h.t.accountWithKey();
    const response = await http.get('/v1/videos/avatars/presets', key);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(await response.json()).toEqual({ avatars: [{ id: 'preset-anna', name: 'Anna' }, { id: 'preset-ben', name: 'Ben' }] });
    expect((await fetch(`${h.baseUrl}/v1/videos/avatars/presets`)).status).toBe(401);
  });
});
