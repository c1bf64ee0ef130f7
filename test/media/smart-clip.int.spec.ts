import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { forbiddenAddressClass } from '../../src/media-check/address';
import { MediaProbe } from '../../src/media-check/media-probe';
import { NO_MEDIA_PROBE } from '../../src/media-check/port';
import { DEFAULT_CLIP_SECONDS, type Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { mp4WithSeconds, png, wav } from '../media-check/make-media';
import { startMediaServer, type MediaServer } from '../media-check/media-server';
import { api, ledgerEvents, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

// POST /v1/videos/generations with the smart-clip SKUs (clip-realman, clip-mixcut, clip-news): the spec's
// field table, the template's flags, money (300 s or a longer duration held, settled on the delivered
// seconds, refunds), 402/503, idempotency, and the media limits probed before any money moves.

const CLIP_MODELS = ['clip-realman', 'clip-mixcut', 'clip-news', 'clip-dear'];
const RULES = { resolution_required: false, video_mode: false, token_billing: false } as const;

function config(sim: Simulator): GatewayConfig {
  return {
    models: [
      mediaModel({ id: 'clip-realman', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-realman', ...RULES } }),
      mediaModel({ id: 'clip-mixcut', kind: 'video', price: { per_second: '0.02' }, video: { kind: 'clip-mixcut', ...RULES } }),
      mediaModel({ id: 'clip-news', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-news', ...RULES } }),
      // 300 s × 0.20 = 60 USD: above the 40.44 grant.
      mediaModel({ id: 'clip-dear', kind: 'video', price: { per_second: '0.20' }, video: { kind: 'clip-realman', ...RULES } }),
      mediaModel({ id: 'clip-nochannel', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-news', ...RULES } }),
    ],
    channels: [mediaChannel(sim, 'clip-a', 'videos', CLIP_MODELS, 0), mediaChannel(sim, 'clip-b', 'videos', CLIP_MODELS, 1)],
  };
}

const GRANT = parseUsd('40.44');
const ended = (b: Record<string, unknown>) => !['queued', 'running'].includes(String(b.status));
/** ceil(ms × price / 1000), as the ledger rounds. */
const costOf = (ms: number, price: string) => (BigInt(ms) * parseUsd(price) + 999n) / 1000n;
const SRC = 'https://cdn.example.com/talk.mp4';
const AUDIO = 'https://cdn.example.com/voice.mp3';
const img = (i: number) => ({ type: 'image', file_url: `https://cdn.example.com/${i}.jpg` });

function harness(options: Parameters<typeof startTaskHarness>[1]) {
  const state = {} as { h: SimulatedGateway; http: ReturnType<typeof api> };
  beforeAll(async () => {
    state.h = await startTaskHarness(config, options);
    state.http = api(state.h);
  });
  afterAll(() => state.h.close());
  beforeEach(() => state.h.sim.reset());
  const submits = () => state.h.sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/api/v3/contents/generations/tasks'));
  async function submit(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const response = await state.http.post('/v1/videos/generations', key, body, headers);
    return { response, body: (await response.json()) as Record<string, unknown> };
  }
  return { state, submits, submit };
}

describe('smart clip', () => {
  const { state, submits, submit } = harness({ mediaProbe: NO_MEDIA_PROBE });

  it('clip-realman: holds 300 s, sends only what applies, settles on the delivered seconds with a call-log row', async () => {
    const { h, http } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const body = {
      model: 'clip-realman',
      style_id: 'rm-talk',
      source_video_url: SRC,
      title: 'Launch day [[sim:task_duration_ms:42500]]',
      duration: 120,
      preprocess: 'roughCut',
      language: 'en',
      bgm: { mode: 'custom', url: 'https://cdn.example.com/bgm.mp3', volume: 40 },
      cover_url: 'https://cdn.example.com/cover.jpg',
      introduce_card: { name: 'Ada', description: 'Founder' },
      materials: [img(1), { type: 'video', file_url: 'https://cdn.example.com/b-roll.mp4', sound_switch: false }],
    };
    const { response, body: answer } = await submit(key, body);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(Object.keys(answer).sort()).toEqual(['created_at', 'id', 'model', 'status']);
    expect(answer).toMatchObject({ status: 'queued', model: 'clip-realman' });
    // 300 s × 0.01, although 120 s was named: the reservation is at least 300 s.
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('3.00'));
    // `duration` is a billing reference for realman: not sent upstream.
    const { model: _m, duration: _d, ...sent } = body;
    expect(submits()[0]!.body).toEqual({ model: 'clip-realman-upstream', ...sent });

    const done = await http.until(`/v1/videos/generations/${answer.id}`, key, ended);
    expect(done).toMatchObject({ id: answer.id, status: 'succeeded', model: 'clip-realman', duration: 43, duration_sec: 42.5, framespersecond: 25 });
    expect((done.content as { video_url: string }).video_url).toBe(done.video_url);
    expect(done).not.toHaveProperty('error');
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - costOf(42_500, '0.01'));
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ model: 'clip-realman', status: 'success', task_id: answer.id, unit_type: 'second', unit_count: 43, cost_usd: '0.425' });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-2)).toEqual(['FundsReserved', 'HoldSettled']);
  });

  it('clip-mixcut: a longer explicit duration is the hold; what is delivered past it is not billed', async () => {
    const { h, http } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'clip-mixcut', style_id: 'mix-promo', audio_url: `${AUDIO}?k=[[sim:task_duration_ms:500000]]`, materials: [img(1), img(2)], duration: 450 };
    const { body: answer } = await submit(key, body);
    // 450 s × 0.02.
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('9.00'));
    expect(submits()[0]!.body).not.toHaveProperty('duration');
    const done = await http.until(`/v1/videos/generations/${answer.id}`, key, ended);
    expect(done).toMatchObject({ status: 'succeeded', duration: 500 });
    // 500 s delivered × 0.02 = 10.00, capped by the 9.00 hold.
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w).toMatchObject({ held: 0n, balance: GRANT - parseUsd('9.00') });
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'success', task_id: answer.id, unit_count: 500, cost_usd: '9.00' });
  });

  it('clip-news: duration clamped to 5-300 s and sent; the composition defaults to random; the hold stays 300 s', async () => {
    const { h, http } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const long = await submit(key, { model: 'clip-news', style_id: 'news-daily', materials: [img(1)], title: 'Evening news', duration: 1000 });
    expect(long.response.status).toBe(200);
    expect(submits()[0]!.body).toEqual({ model: 'clip-news-upstream', style_id: 'news-daily', materials: [img(1)], title: 'Evening news', duration: 300, material_composition: 'random' });
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('3.00'));
    const done = await http.until(`/v1/videos/generations/${long.body.id}`, key, ended);
    expect(done).toMatchObject({ status: 'succeeded', duration: 300 });
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - parseUsd('3.00'));

    const short = await submit(key, { model: 'clip-news', style_id: 'news-daily', materials: [img(2)], title: 'Flash', duration: 2, material_composition: 'order' });
    expect(submits()[1]!.body).toMatchObject({ duration: 5, material_composition: 'order' });
    await http.until(`/v1/videos/generations/${short.body.id}`, key, ended);
    // 5 s delivered × 0.01.
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - parseUsd('3.00') - parseUsd('0.05'));

    const none = await submit(key, { model: 'clip-news', style_id: 'news-daily', materials: [img(3)], title: 'Default length' });
    expect(submits()[2]!.body).not.toHaveProperty('duration');
    const third = await http.until(`/v1/videos/generations/${none.body.id}`, key, ended);
    expect(third).toMatchObject({ duration: DEFAULT_CLIP_SECONDS });
  });

  it("drops the title and the introduce card where the template has no layer for them", async () => {
    const { h } = state;
    const { key } = await h.t.accountWithKey();
    const common = { model: 'clip-realman', source_video_url: SRC, title: 'T', introduce_card: { name: 'N', description: 'D' } };
    expect((await submit(key, { ...common, style_id: 'rm-bare' })).response.status).toBe(200);
    expect((await submit(key, { ...common, style_id: 'rm-vlog' })).response.status).toBe(200);
    const [bare, vlog] = submits();
    expect(bare!.body).not.toHaveProperty('title');
    expect(bare!.body).toHaveProperty('introduce_card');
    expect(vlog!.body).toHaveProperty('title');
    expect(vlog!.body).not.toHaveProperty('introduce_card');
  });

  it.each([
    ['task_failed', 'failed'],
    ['task_expired', 'expired'],
  ])('refunds in full when the upstream task ends %s', async (scenario, status) => {
    const { h, http } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const { body } = await submit(key, { model: 'clip-mixcut', style_id: 'mix-clean', audio_url: AUDIO, materials: [img(1)], language: `zh [[sim:${scenario}]]`, duration: 400 });
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('8.00'));
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done.status).toBe(status);
    expect(done.error).toEqual({ code: expect.any(String), message: expect.any(String) });
    expect(done).not.toHaveProperty('video_url');
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'error', task_id: body.id, cost_usd: '0.00', unit_count: 0 });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-2)).toEqual(['FundsReserved', 'HoldReleased']);
  });

  it('refuses every field rule with a 400 invalid_request naming the field, before any money moves or any upstream task', async () => {
    const { h } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const rm = { model: 'clip-realman', style_id: 'rm-talk', source_video_url: SRC };
    const mx = { model: 'clip-mixcut', style_id: 'mix-promo', audio_url: AUDIO, materials: [img(1)] };
    const nw = { model: 'clip-news', style_id: 'news-daily', materials: [img(1)], title: 'T' };
    const { style_id: _s, ...rmNoStyle } = rm;
    const { source_video_url: _v, ...rmNoSource } = rm;
    const { audio_url: _a, ...mxNoAudio } = mx;
    const { materials: _mm, ...mxNoMaterials } = mx;
    const { materials: _nm, ...nwNoMaterials } = nw;
    const { title: _t, ...nwNoTitle } = nw;
    const cases: Array<[Record<string, unknown>, string | RegExp]> = [
      [rmNoStyle, 'style_id: required for clip-realman'],
      [rmNoSource, 'source_video_url: required for clip-realman'],
      [mxNoAudio, 'audio_url: required for clip-mixcut'],
      [mxNoMaterials, 'materials: required for clip-mixcut'],
      [{ ...mx, materials: [] }, /^materials: clip-mixcut needs at least one/],
      [nwNoMaterials, 'materials: required for clip-news'],
      [nwNoTitle, 'title: required for clip-news'],
      [{ ...rm, audio_url: AUDIO }, /^audio_url: not a field of clip-realman \(it takes /],
      [{ ...rm, material_composition: 'order' }, /^material_composition: not a field of clip-realman/],
      [{ ...mx, preprocess: 'roughCut', source_video_url: SRC }, /^source_video_url, preprocess: not a field of clip-mixcut/],
      // (`content`, the standard video's field, is taken when sent: see below.)
      [{ ...nw, resolution: '720p' }, /^resolution: not a field of clip-news/],
      [{ ...rm, materials: Array.from({ length: 11 }, (_, i) => img(i)) }, /materials/],
      [{ ...rm, materials: [{ type: 'audio', file_url: AUDIO }] }, /materials/],
      [{ ...rm, materials: [{ type: 'image', file_url: 'https://x.com/a.jpg', extra: 1 }] }, /materials/],
      [{ ...rm, preprocess: 'fineCut' }, /preprocess/],
      [{ ...nw, material_composition: 'shuffle' }, /material_composition/],
      [{ ...rm, bgm: { mode: 'custom' } }, 'bgm.url: required when bgm.mode is custom'],
      [{ ...rm, bgm: { mode: 'auto', url: 'https://x.com/m.mp3' } }, 'bgm.url: only with bgm.mode custom (got mode auto)'],
      [{ ...rm, bgm: { mode: 'loud' } }, /bgm/],
      [{ ...rm, bgm: { mode: 'none', volume: 101 } }, /bgm/],
      [{ ...rm, introduce_card: { name: 'Only a name' } }, /introduce_card/],
      [{ ...rm, source_video_url: 'ftp://cdn.example.com/a.mp4' }, 'source_video_url: must be a public http(s) URL'],
      [{ ...mx, materials: [{ type: 'image', file_url: 'data:image/png;base64,iVBORw0KGgo=' }] }, 'materials[0].file_url: must be a public http(s) URL'],
      [{ ...rm, cover_url: '/cover.jpg' }, 'cover_url: must be a public http(s) URL'],
      [{ ...rm, duration: 0 }, /duration/],
      [{ ...rm, style_id: 'no-such-style' }, /^style_id: no clip template "no-such-style" \(GET \/v1\/videos\/clip-templates\?scene=realMan lists them\)$/],
      [{ ...rm, style_id: 'news-daily' }, 'style_id: "news-daily" is a newsMixCutting template; clip-realman takes realMan templates'],
    ];
    for (const [body, message] of cases) {
      const { response, body: answer } = await submit(key, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      expect(answer.error, JSON.stringify(body)).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
      const text = (answer.error as { message: string }).message;
      if (typeof message === 'string') expect(text, JSON.stringify(body)).toBe(message);
      else expect(text, JSON.stringify(body)).toMatch(message);
    }
    expect(submits()).toHaveLength(0);
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(0);
    const rows = await logRows(h, accountId);
    expect(rows).toHaveLength(cases.length);
    expect(rows.every((r) => r.status === 'rejected' && r.cost_usd === '0.00' && r.error_code === 'invalid_request')).toBe(true);
  });

  it('gives 402 quota_exceeded with no upstream task when 300 s is above the balance', async () => {
    const { h } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'clip-dear', style_id: 'rm-talk', source_video_url: SRC });
    expect(response.status).toBe(402);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(body).toMatchObject({ error: { code: 'quota_exceeded', type: 'insufficient_quota' } });
    // 3600 s × 0.01 = 36 USD fits; the same at 4100 s would not, but duration stops at 3600.
    const big = await submit(key, { model: 'clip-realman', style_id: 'rm-talk', source_video_url: SRC, duration: 3601 });
    expect(big.response.status).toBe(400);
    expect(submits()).toHaveLength(0);
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const rows = await logRows(h, accountId);
    expect(rows.find((r) => r.error_code === 'quota_exceeded')).toMatchObject({ status: 'rejected', model: 'clip-dear', cost_usd: '0.00' });
  });

  it('takes a content array when one is sent (the clip SKUs have their own fields; none is needed), and does not send it upstream', async () => {
    const { h } = state;
    const { key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'clip-news', style_id: 'news-daily', title: 'T', materials: [img(1)], content: [{ type: 'text', text: 'Morning news' }] });
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(submits()[0]!.body).toEqual({ model: 'clip-news-upstream', style_id: 'news-daily', title: 'T', materials: [img(1)], material_composition: 'random' });
  });

  it('answers model errors by Errors rule 8: 403 model_not_allowed, 404 model_not_found, nothing held', async () => {
    const { h } = state;
    const { accountId, key } = await h.t.accountWithKey({ allowed_models: ['clip-news'] });
    const refused = await submit(key, { model: 'clip-realman', style_id: 'rm-talk', source_video_url: SRC });
    expect(refused.response.status).toBe(403);
    expect(refused.response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(refused.body).toMatchObject({ error: { code: 'model_not_allowed', type: 'invalid_request_error' } });
    const unknown = await submit(key, { model: 'clip-unknown', style_id: 'rm-talk', source_video_url: SRC });
    expect(unknown.response.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: 'model_not_found' } });
    expect(submits()).toHaveLength(0);
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const rows = await logRows(h, accountId);
    expect(rows.map((r) => [r.status, r.error_code]).sort()).toEqual([['rejected', 'model_not_allowed'], ['rejected', 'model_not_found']]);
  });

  it('answers 503 no_channel_available for a clip model no channel serves, holding nothing', async () => {
    const { h } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'clip-nochannel', style_id: 'news-daily', materials: [img(1)], title: 'T' });
    expect(response.status).toBe(503);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(body).toMatchObject({ error: { code: 'no_channel_available' } });
    expect(submits()).toHaveLength(0);
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
  });

  it('replays an Idempotency-Key: the same task id, Idempotency-Replayed, one upstream task, one hold', async () => {
    const { h, http } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'clip-news', style_id: 'news-flash', materials: [img(1), img(2)], title: 'Once', duration: 30 };
    const first = await submit(key, body, { 'idempotency-key': 'clip-1' });
    expect(first.response.status).toBe(200);
    const again = await submit(key, body, { 'idempotency-key': 'clip-1' });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(submits()).toHaveLength(1);
    await http.until(`/v1/videos/generations/${first.body.id}`, key, ended);
    const events = await ledgerEvents(h, accountId);
    expect(events.filter((e) => e.type === 'FundsReserved')).toHaveLength(1);
    // 30 s delivered × 0.01, once.
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - parseUsd('0.30'));
    const other = await submit(key, { ...body, title: 'Twice' }, { 'idempotency-key': 'clip-1' });
    expect(other.response.status).toBe(409);
    expect(other.body).toMatchObject({ error: { code: 'idempotency_key_reuse' } });
    const rows = (await logRows(h, accountId)).filter((r) => r.status === 'success');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ task_id: first.body.id, unit_count: 30 });
  });

  it('passes style_id on when the templates cannot be read, and the upstream decides', async () => {
    const { h, http } = state;
    const { key } = await h.t.accountWithKey();
    // Both channels fail the template lookup: the submission goes on with every field.
    h.sim.enqueueFor({ pathPrefix: '/clip-a/api/v3/clip-templates' }, 'http_503');
    h.sim.enqueueFor({ pathPrefix: '/clip-b/api/v3/clip-templates' }, 'http_503');
    // A template no other test reads (none is cached): without a title layer, and of another scene.
    const { response, body } = await submit(key, { model: 'clip-realman', style_id: 'vm-plain', source_video_url: SRC, title: 'T' });
    expect(response.status).toBe(200);
    // Its flags unknown, every input is sent.
    expect(submits()[0]!.body).toMatchObject({ style_id: 'vm-plain', title: 'T' });
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done.status).toBe('succeeded');
  });

  it('does not let a slow template upstream hold the submission past the probes\' budget', async () => {
    const { h } = state;
    const { key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/clip-a/api/v3/clip-templates' }, 'slow_first_byte:8000');
    const started = Date.now();
    const { response } = await submit(key, { model: 'clip-realman', style_id: 'vm-anchor', source_video_url: SRC });
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(7_000);
  });
});

// Real small files on a local server (test/media-check/fixtures): the probe may fetch from 127.0.0.1, and
// refuses every other non-public address as it would in production.
const fixture = (name: string) => readFileSync(new URL(`../media-check/fixtures/${name}`, import.meta.url));
const clip = fixture('clip-faststart.mp4');
const FILES = {
  'talk.mp4': { body: clip, type: 'video/mp4' },
  'talk-hevc.mov': { body: fixture('clip-hevc.mov'), type: 'video/quicktime' },
  'long-talk.mp4': { body: mp4WithSeconds(clip, 300), type: 'video/mp4' },
  'b-roll-55.mp4': { body: mp4WithSeconds(clip, 55), type: 'video/mp4' },
  'b-roll-59.mp4': { body: mp4WithSeconds(clip, 59), type: 'video/mp4' },
  'b-roll-61.mp4': { body: mp4WithSeconds(clip, 61), type: 'video/mp4' },
  'photo.jpg': { body: fixture('photo-100x100.jpg'), type: 'image/jpeg' },
  'still.webp': { body: fixture('still-64x48.webp'), type: 'image/webp' },
  'animated.webp': { body: fixture('animated-32x32.webp'), type: 'image/webp' },
  'wide.png': { body: png(2000, 10), type: 'image/png' },
  'voice.mp3': { body: fixture('tone-xing.mp3'), type: 'audio/mpeg' },
  'voice.wav': { body: wav(2), type: 'audio/wav' },
  'long.wav': { body: wav(301), type: 'audio/wav' },
} as const;

describe('smart clip: media limits, probed before any money moves', () => {
  const probe = new MediaProbe(
    { allowPrivateAddresses: false, timeoutMs: 3000, maxReadBytes: 1024 * 1024 },
    { forbidden: (address) => (address === '127.0.0.1' ? null : forbiddenAddressClass(address)) },
  );
  const { state, submits, submit } = harness({ mediaProbe: probe });
  let media: MediaServer;
  beforeAll(async () => {
    media = await startMediaServer(FILES);
  });
  afterAll(() => media.close());
  const at = (path: string) => `${media.origin}/${path}`;
  const image = (path: string) => ({ type: 'image', file_url: at(path) });
  const video = (path: string) => ({ type: 'video', file_url: at(path) });

  it('accepts files within the limits, probing each URL once', async () => {
    const { h, http } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, {
      model: 'clip-realman',
      style_id: 'rm-talk',
      source_video_url: at('talk-hevc.mov'),
      materials: [image('photo.jpg'), image('still.webp'), video('b-roll-55.mp4'), image('photo.jpg')],
      bgm: { mode: 'custom', url: at('voice.wav') },
      cover_url: at('photo.jpg'),
    });
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('3.00'));
    // photo.jpg is named three times and fetched as one probe (a HEAD, then a ranged read).
    expect(media.seen.filter((s) => s.path === '/photo.jpg' && s.method === 'HEAD')).toHaveLength(1);
    expect((await http.until(`/v1/videos/generations/${body.id}`, key, ended)).status).toBe('succeeded');
  });

  it.each([
    ['the source video format', { model: 'clip-realman', style_id: 'rm-talk', source_video_url: 'voice.wav' }, /^source_video_url: source video: must be mp4, mov; http:\/\/127\.0\.0\.1:\d+\/voice\.wav is wav$/],
    ['the source video length', { model: 'clip-realman', style_id: 'rm-talk', source_video_url: 'long-talk.mp4' }, /^source_video_url: source video: must be under 300 s; .*long-talk\.mp4 is 300 s$/],
    ['a still material image', { model: 'clip-mixcut', style_id: 'mix-promo', audio_url: 'voice.mp3', materials: [['image', 'photo.jpg'], ['image', 'animated.webp']] }, /^materials\[1\]\.file_url: material image: must be a still image; .*animated\.webp is animated$/],
    ['a material image side', { model: 'clip-mixcut', style_id: 'mix-promo', audio_url: 'voice.mp3', materials: [['image', 'wide.png']] }, /^materials\[0\]\.file_url: material image: each side must be under 2000 px; .*wide\.png is 2000x10$/],
    ['a material image that is a video', { model: 'clip-news', style_id: 'news-daily', title: 'T', materials: [['image', 'talk.mp4']] }, /^materials\[0\]\.file_url: material image: must be jpg, png, webp; .*talk\.mp4 is mp4$/],
    ['a material video over 60 s', { model: 'clip-news', style_id: 'news-daily', title: 'T', materials: [['video', 'b-roll-55.mp4'], ['video', 'b-roll-61.mp4']] }, /^materials\[1\]\.file_url: material video: must be at most 60 s; .*b-roll-61\.mp4 is 61 s$/],
    [
      'the materials together over 300 s (images count 2 s each)',
      { model: 'clip-news', style_id: 'news-daily', title: 'T', materials: [...Array.from({ length: 5 }, () => ['video', 'b-roll-59.mp4']), ['image', 'photo.jpg'], ['image', 'still.webp'], ['image', 'photo.jpg']] },
      'materials: together at most 300 s (each image counts 2 s, each video its length); these come to 301 s',
    ],
    [
      'the materials together over 300 s (six videos)',
      { model: 'clip-news', style_id: 'news-daily', title: 'T', materials: Array.from({ length: 6 }, () => ['video', 'b-roll-55.mp4']) },
      'materials: together at most 300 s (each image counts 2 s, each video its length); these come to 330 s',
    ],
    ['the spoken audio length', { model: 'clip-mixcut', style_id: 'mix-promo', audio_url: 'long.wav', materials: [['image', 'photo.jpg']] }, /^audio_url: spoken audio: must be at most 300 s; .*long\.wav is 301 s$/],
    ['the spoken audio format', { model: 'clip-mixcut', style_id: 'mix-promo', audio_url: 'talk.mp4', materials: [['image', 'photo.jpg']] }, /^audio_url: spoken audio: must be mp3, wav, m4a; .*talk\.mp4 is mp4$/],
    ['the bgm length', { model: 'clip-realman', style_id: 'rm-talk', source_video_url: 'talk.mp4', bgm: { mode: 'custom', url: 'long.wav' } }, /^bgm\.url: background music: must be at most 300 s; .*long\.wav is 301 s$/],
    ['the cover format', { model: 'clip-realman', style_id: 'rm-talk', source_video_url: 'talk.mp4', cover_url: 'still.webp' }, /^cover_url: cover: must be jpg, png; .*still\.webp is webp$/],
    ['the cover side', { model: 'clip-realman', style_id: 'rm-talk', source_video_url: 'talk.mp4', cover_url: 'wide.png' }, /^cover_url: cover: each side must be under 2000 px; .*wide\.png is 2000x10$/],
  ])('refuses %s with a 400 naming the limit, nothing held, no upstream task', async (_what, shape, message) => {
    const { h } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const body: Record<string, unknown> = { ...shape };
    for (const field of ['source_video_url', 'audio_url', 'cover_url'] as const) if (typeof body[field] === 'string') body[field] = at(body[field] as string);
    if (Array.isArray(body.materials)) body.materials = (body.materials as Array<[string, string]>).map(([type, path]) => ({ type, file_url: at(path) }));
    const bgm = body.bgm as { mode: string; url: string } | undefined;
    if (bgm) body.bgm = { ...bgm, url: at(bgm.url) };
    const { response, body: answer } = await submit(key, body);
    expect(response.status, JSON.stringify(answer)).toBe(400);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(answer.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    const text = (answer.error as { message: string }).message;
    if (typeof message === 'string') expect(text).toBe(message);
    else expect(text).toMatch(message);
    expect(submits()).toHaveLength(0);
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(0);
  });

  it('refuses a URL on a private or link-local address (the SSRF guard) without fetching it', async () => {
    const { h } = state;
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, {
      model: 'clip-mixcut',
      style_id: 'mix-promo',
      audio_url: at('voice.mp3'),
      materials: [image('photo.jpg'), { type: 'video', file_url: 'http://169.254.169.254/latest/meta-data?token=secret' }],
    });
    expect(response.status).toBe(400);
    const message = (body.error as { message: string }).message;
    expect(message).toBe('materials[1].file_url: the URL names 169.254.169.254, the cloud metadata address (link-local); media URLs must be on public addresses');
    expect(message).not.toContain('secret');
    expect(submits()).toHaveLength(0);
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
  });

  it('passes on a URL that cannot be probed (the upstream decides)', async () => {
    const { h } = state;
    const { key } = await h.t.accountWithKey();
    const missing = at('gone.mp4');
    const { response } = await submit(key, { model: 'clip-realman', style_id: 'rm-talk', source_video_url: missing, materials: [image('photo.jpg?nohead&norange')] });
    expect(response.status).toBe(200);
    expect(submits()[0]!.body).toMatchObject({ source_video_url: missing });
  });

  it('probes the URLs at the same time, and the whole wait stays within a few seconds', async () => {
    const { h } = state;
    const { key } = await h.t.accountWithKey();
    // Each trickles its bytes one every 50 ms: each probe runs into its own 3 s limit. One after another
    // they would take 15 s.
    const slow = (i: number) => ({ type: 'video', file_url: at(`talk.mp4?trickle&n=${i}`) });
    const started = Date.now();
    const { response } = await submit(key, { model: 'clip-news', style_id: 'news-daily', title: 'T', materials: Array.from({ length: 5 }, (_, i) => slow(i)) });
    const took = Date.now() - started;
    expect(response.status).toBe(200);
    expect(took).toBeLessThan(5_500);
  });
});
