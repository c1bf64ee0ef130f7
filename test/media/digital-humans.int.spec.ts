import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig, ModelConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { MediaProbe } from '../../src/media-check/media-probe';
import type { Scenario, Simulator } from '../../src/simulator';
import { startMediaServer, type MediaServer } from '../media-check/media-server';
import type { SimulatedGateway } from '../support/gateway';
import { api, ledgerEvents, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

// Digital-human videos (dh-avatar, lip-sync, motion transfer) over HTTP against the simulator: the
// references an avatar call may name, the exactly-one driving rule, duration as the reservation's basis
// and settlement on the delivered seconds capped by it, refunds, probing of every input, Errors rule 8.

const fixture = (name: string) => readFileSync(new URL(`../media-check/fixtures/${name}`, import.meta.url));
const FILES = {
  'photo.jpg': { body: fixture('photo-100x100.jpg'), type: 'image/jpeg' },
  'animated.webp': { body: fixture('animated-32x32.webp'), type: 'image/webp' },
  'clip.mp4': { body: fixture('clip-faststart.mp4'), type: 'video/mp4' },
  'voice.mp3': { body: fixture('tone-cbr.mp3'), type: 'audio/mpeg' },
} as const;

const DH = ['dh-avatar', 'dh-lipsync', 'dh-lipsync-pro', 'dh-lipsync-max', 'dh-motion', 'dh-motion-flat', 'dh-dear', 'vid-flat'];
const video = (kind: 'dh-avatar' | 'dh-lipsync' | 'dh-motion') => ({ kind, resolution_required: false, video_mode: false, token_billing: false });

function config(sim: Simulator): GatewayConfig {
  return {
    models: [
      mediaModel({ id: 'avatar-std', kind: 'avatar', price: { per_call: '1.00' } }),
      mediaModel({ id: 'tts', kind: 'speech', price: { per_1k_characters: '0.01', per_voice: '0.50' } } as Partial<ModelConfig> & Pick<ModelConfig, 'id' | 'kind' | 'price'>),
      mediaModel({ id: 'dh-avatar', kind: 'video', price: { per_second: '0.10' }, video: video('dh-avatar') }),
      mediaModel({ id: 'dh-dear', kind: 'video', price: { per_second: '5.00' }, video: video('dh-lipsync') }),
      mediaModel({ id: 'dh-lipsync', kind: 'video', price: { per_second: '0.20' }, video: video('dh-lipsync') }),
      mediaModel({ id: 'dh-lipsync-pro', kind: 'video', price: { per_second: '0.30' }, video: video('dh-lipsync') }),
      mediaModel({ id: 'dh-lipsync-max', kind: 'video', price: { per_second: '0.40' }, video: video('dh-lipsync') }),
      mediaModel({ id: 'dh-motion', kind: 'video', price: { per_second: { fast: '0.05', standard: '0.10', max: '0.25' } }, video: video('dh-motion') }),
      mediaModel({ id: 'dh-motion-flat', kind: 'video', price: { per_second: '0.07' }, video: video('dh-motion') }),
      mediaModel({ id: 'dh-nochannel', kind: 'video', price: { per_second: '0.10' }, video: video('dh-avatar') }),
      mediaModel({ id: 'vid-flat', kind: 'video', price: { per_second: '0.15' } }),
      mediaModel({ id: 'dh-avatar-far', kind: 'video', price: { per_second: '0.10' }, video: video('dh-avatar') }),
    ],
    channels: [
      mediaChannel(sim, 'av-a', 'avatars', ['avatar-std']),
      mediaChannel(sim, 'sp-a', 'speech', ['tts']),
      mediaChannel(sim, 'dh-a', 'videos', DH),
      // Another upstream (another origin): it cannot know avatars made on av-a.
      { ...mediaChannel(sim, 'dh-far', 'videos', ['dh-avatar-far']), base_url: `${sim.url.replace('127.0.0.1', 'localhost')}/dh-far` },
    ],
    presets: { voices: [{ id: 'preset-voice', name: 'Narrator' }], avatars: [{ id: 'preset-anna', name: 'Anna' }] },
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
const url = (name: string) => `${media.origin}/${name}`;
const taskSubmits = () => h.sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/api/v3/contents/generations/tasks'));
const videoSubmits = () => taskSubmits().filter((r) => r.path.startsWith('/dh-a/'));
const ended = (b: Record<string, unknown>) => !['queued', 'running', 'pending'].includes(String(b.status));

async function submit(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await http.post('/v1/videos/generations', key, body, headers);
  return { response, body: (await response.json()) as Record<string, unknown> };
}

/** An avatar of the account, once the upstream made it (ready) or failed it. */
async function avatar(key: string, scenario?: Scenario): Promise<string> {
  if (scenario) h.sim.enqueueFor({ protocol: 'avatars' }, scenario);
  const response = await http.post('/v1/videos/avatars', key, { name: 'Host', source_url: url('photo.jpg') });
  const id = String(((await response.json()) as { id: string }).id);
  if (scenario !== 'task_polls:100000') await http.until(`/v1/videos/avatars/${id}`, key, ended);
  return id;
}

/** The account's wallet after the avatar fee (1.00) was settled. */
const AFTER_AVATAR = GRANT - parseUsd('1.00');

describe('dh-avatar', () => {
  it('drives an own ready avatar with an audio_url: reserves price × duration, sends the upstream reference, settles the delivered seconds', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const id = await avatar(key);
    h.sim.enqueueFor({ protocol: 'videos' }, ['task_duration_ms:6500', 'task_polls:20']);
    const { response, body } = await submit(key, { model: 'dh-avatar', avatar: id, audio_url: url('voice.mp3'), duration: 8, title: 'Weekly news' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(body).toMatchObject({ status: 'queued', model: 'dh-avatar' });
    // 8 s × 0.10 held on top of the settled avatar fee.
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: AFTER_AVATAR, held: parseUsd('0.80') });
    const sent = videoSubmits()[0]!.body as Record<string, unknown>;
    expect(sent).toEqual({ model: 'dh-avatar-upstream', avatar: expect.stringMatching(/^cgt-sim/), audio_url: url('voice.mp3'), duration: 8, title: 'Weekly news' });
    // The upstream's own reference, never the gateway's id.
    expect(sent.avatar).not.toBe(id);

    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done).toMatchObject({ status: 'succeeded', duration: 7, duration_sec: 6.5 });
    expect(done.video_url).toEqual(expect.stringMatching(/\.mp4$/));
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w).toMatchObject({ held: 0n, balance: AFTER_AVATAR - parseUsd('0.65') });
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ model: 'dh-avatar', status: 'success', task_id: body.id, unit_type: 'second', unit_count: 7, cost_usd: '0.65' });
  });

  it('caps the settlement at the reservation when the upstream delivers longer than duration', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ protocol: 'videos' }, 'task_duration_ms:20000');
    const { body } = await submit(key, { model: 'dh-avatar', avatar: 'preset-anna', voice: 'preset-voice', text: 'Hello there', duration: 8 });
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done).toMatchObject({ status: 'succeeded', duration: 20 });
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ held: 0n, balance: GRANT - parseUsd('0.80') });
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ unit_count: 20, cost_usd: '0.80' });
    // A preset avatar and a preset voice go upstream as they are.
    expect(videoSubmits()[0]!.body).toEqual({ model: 'dh-avatar-upstream', avatar: 'preset-anna', voice: 'preset-voice', text: 'Hello there', duration: 8 });
  });

  it('speaks text in a voice the account cloned: its upstream id goes upstream', async () => {
    const { key } = await h.t.accountWithKey();
    const id = await avatar(key);
    const clone = await http.post('/v1/audio/voices', key, { name: 'Me', audio_url: url('voice.mp3') });
    expect(clone.status).toBe(200);
    const voice = String(((await clone.json()) as { id: string }).id);
    const { response, body } = await submit(key, { model: 'dh-avatar', avatar: id, voice, text: 'Good morning', duration: 3 });
    expect(response.status).toBe(200);
    expect(videoSubmits()[0]!.body).toMatchObject({ voice: 'voice_sim000001', text: 'Good morning' });
    expect(await http.until(`/v1/videos/generations/${body.id}`, key, ended)).toMatchObject({ status: 'succeeded' });
  });

  it.each<[Scenario, string]>([
    ['task_failed', 'failed'],
    ['task_expired', 'expired'],
  ])('refunds the reservation in full when the upstream task ends %s', async (scenario, status) => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ protocol: 'videos' }, [scenario, 'task_polls:20']);
    const { body } = await submit(key, { model: 'dh-avatar', avatar: 'preset-anna', audio_url: url('voice.mp3'), duration: 6 });
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('0.60'));
    expect(await http.until(`/v1/videos/generations/${body.id}`, key, ended)).toMatchObject({ status });
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ held: 0n, balance: GRANT });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-2)).toEqual(['FundsReserved', 'HoldReleased']);
  });

  it('refuses references that are unknown, foreign, not ready or deleted, and voices that are none of the account\'s or the presets (400, nothing held)', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    const foreign = await avatar(b.key);
    const failed = await avatar(a.key, 'task_failed');
    const deleted = await avatar(a.key);
    expect((await fetch(`${h.baseUrl}/v1/videos/avatars/${deleted}`, { method: 'DELETE', headers: { authorization: `Bearer ${a.key}` } })).status).toBe(200);
    const pending = await avatar(a.key, 'task_polls:100000');
    const foreignClone = await http.post('/v1/audio/voices', b.key, { name: 'B', audio_url: url('voice.mp3') });
    const foreignVoice = String(((await foreignClone.json()) as { id: string }).id);
    await h.t.gateway.ledger.idle();
    const before = await h.t.gateway.ledger.wallet(a.accountId);
    const submitsBefore = videoSubmits().length;

    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ avatar: '00000000-0000-0000-0000-000000000000', audio_url: url('voice.mp3') }, /avatar: no avatar/],
      [{ avatar: 'somebody-else', audio_url: url('voice.mp3') }, /neither an avatar of this account nor a preset/],
      [{ avatar: foreign, audio_url: url('voice.mp3') }, /avatar: no avatar/],
      [{ avatar: failed, audio_url: url('voice.mp3') }, /not ready \(failed\)/],
      [{ avatar: pending, audio_url: url('voice.mp3') }, /not ready \(pending\)/],
      [{ avatar: deleted, audio_url: url('voice.mp3') }, /avatar: no avatar/],
      [{ avatar: 'preset-anna', voice: 'alloy', text: 'x' }, /voice: "alloy" is neither/],
      [{ avatar: 'preset-anna', voice: foreignVoice, text: 'x' }, /voice: no voice/],
    ];
    for (const [fields, message] of cases) {
      const { response, body } = await submit(a.key, { model: 'dh-avatar', duration: 5, ...fields });
      expect(response.status, JSON.stringify(fields)).toBe(400);
      expect(body).toMatchObject({ error: { code: 'invalid_request', type: 'invalid_request_error', message: expect.stringMatching(message) } });
    }
    expect(videoSubmits()).toHaveLength(submitsBefore);
    expect(await h.t.gateway.ledger.wallet(a.accountId)).toEqual(before);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no avatar', { audio_url: 'https://x.test/a.mp3', duration: 5 }, /avatar/],
    ['no duration', { avatar: 'preset-anna', audio_url: 'https://x.test/a.mp3' }, /duration: required/],
    ['a zero duration', { avatar: 'preset-anna', audio_url: 'https://x.test/a.mp3', duration: 0 }, /duration/],
    ['both audio_url and voice + text', { avatar: 'preset-anna', audio_url: 'https://x.test/a.mp3', voice: 'preset-voice', text: 'x', duration: 5 }, /exactly one of audio_url/],
    ['neither audio_url nor voice + text', { avatar: 'preset-anna', duration: 5 }, /exactly one of audio_url/],
    ['voice without text', { avatar: 'preset-anna', voice: 'preset-voice', duration: 5 }, /text: required with voice/],
    ['text without voice', { avatar: 'preset-anna', text: 'x', duration: 5 }, /voice: required with text/],
    ['text over 10000 characters', { avatar: 'preset-anna', voice: 'preset-voice', text: 'a'.repeat(10_001), duration: 5 }, /text: must be at most 10000 characters/],
    ['a title over 20 characters', { avatar: 'preset-anna', audio_url: 'https://x.test/a.mp3', title: 't'.repeat(21), duration: 5 }, /title: must be at most 20 characters/],
    ['a non-http(s) audio_url', { avatar: 'preset-anna', audio_url: 'file:///etc/passwd', duration: 5 }, /audio_url: must be a public http\(s\) URL/],
  ])('refuses %s with 400 invalid_request_error and a rejected call-log row', async (_name, fields, message) => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'dh-avatar', ...fields });
    expect(response.status).toBe(400);
    expect(body).toMatchObject({ error: { code: 'invalid_request', type: 'invalid_request_error', message: expect.stringMatching(message) } });
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(taskSubmits()).toHaveLength(0);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'rejected', error_code: 'invalid_request', cost_usd: '0.00' });
  });

  it('sends an own avatar only to video channels of the upstream that made it (none: 503)', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const id = await avatar(key);
    const { response, body } = await submit(key, { model: 'dh-avatar-far', avatar: id, audio_url: url('voice.mp3'), duration: 5 });
    expect(response.status).toBe(503);
    expect(body).toMatchObject({ error: { code: 'no_channel_available', message: expect.stringContaining('upstream that holds') } });
    expect(videoSubmits()).toHaveLength(0);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(0n);
  });

  it('takes text of exactly 10000 characters and a title of 20', async () => {
    const { key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'dh-avatar', avatar: 'preset-anna', voice: 'preset-voice', text: '字'.repeat(10_000), title: '题'.repeat(20), duration: 5 });
    expect(response.status).toBe(200);
    // Ended before the next test: its polls would take the scenarios that test queues.
    await http.until(`/v1/videos/generations/${body.id}`, key, ended);
  });

  it('probes audio_url as spoken audio before money moves', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'dh-avatar', avatar: 'preset-anna', audio_url: url('photo.jpg'), duration: 5 });
    expect(response.status).toBe(400);
    expect(body).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('audio_url: spoken audio: must be mp3, wav, m4a') } });
    expect(taskSubmits()).toHaveLength(0);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(0n);
  });
});

describe('lip-sync', () => {
  it.each([
    ['dh-lipsync', '0.20'],
    ['dh-lipsync-pro', '0.30'],
    ['dh-lipsync-max', '0.40'],
  ])('%s reserves its per-second price × duration and settles the delivered seconds', async (model, price) => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ protocol: 'videos' }, ['task_duration_ms:4000', 'task_polls:20']);
    const { response, body } = await submit(key, { model, source_video_url: url('clip.mp4'), audio_url: url('voice.mp3'), duration: 5 });
    expect(response.status).toBe(200);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd(price) * 5n);
    expect(videoSubmits()[0]!.body).toEqual({ model: `${model}-upstream`, source_video_url: url('clip.mp4'), audio_url: url('voice.mp3'), duration: 5 });
    expect(await http.until(`/v1/videos/generations/${body.id}`, key, ended)).toMatchObject({ status: 'succeeded', duration: 4 });
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ held: 0n, balance: GRANT - parseUsd(price) * 4n });
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no source_video_url', { audio_url: 'https://x.test/a.mp3', duration: 5 }, /source_video_url/],
    ['no audio_url', { source_video_url: 'https://x.test/a.mp4', duration: 5 }, /audio_url/],
    ['no duration', { source_video_url: 'https://x.test/a.mp4', audio_url: 'https://x.test/a.mp3' }, /duration: required/],
  ])('refuses %s with 400', async (_name, fields, message) => {
    const { key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'dh-lipsync', ...fields });
    expect(response.status).toBe(400);
    expect(body).toMatchObject({ error: { code: 'invalid_request', message: expect.stringMatching(message) } });
    expect(taskSubmits()).toHaveLength(0);
  });

  it('probes both inputs: a source video that is an image, an audio that is a video', async () => {
    const { key } = await h.t.accountWithKey();
    const video = await submit(key, { model: 'dh-lipsync', source_video_url: url('photo.jpg'), audio_url: url('voice.mp3'), duration: 5 });
    expect(video.response.status).toBe(400);
    expect(video.body).toMatchObject({ error: { message: expect.stringContaining('source_video_url: source video: must be mp4, mov') } });
    const audio = await submit(key, { model: 'dh-lipsync', source_video_url: url('clip.mp4'), audio_url: url('clip.mp4'), duration: 5 });
    expect(audio.response.status).toBe(400);
    expect(audio.body).toMatchObject({ error: { message: expect.stringContaining('audio_url: spoken audio') } });
    expect(taskSubmits()).toHaveLength(0);
  });

  it('replays an Idempotency-Key: the same task id, one upstream task, one reservation', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'dh-lipsync', source_video_url: url('clip.mp4'), audio_url: url('voice.mp3'), duration: 5 };
    const first = await submit(key, body, { 'idempotency-key': 'lipsync-1' });
    const again = await submit(key, body, { 'idempotency-key': 'lipsync-1' });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(videoSubmits()).toHaveLength(1);
    await http.until(`/v1/videos/generations/${first.body.id}`, key, ended);
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(1);
  });
});

describe('motion transfer', () => {
  const images = (n: number, at?: string) => Array.from({ length: n }, () => ({ type: 'image_url', image_url: { url: at ?? url('photo.jpg') } }));
  // For the table below (built before the media server runs): refused before any probe.
  const someImages = (n: number) => images(n, 'https://x.test/p.jpg');

  it.each([
    [undefined, '0.10'],
    ['fast', '0.05'],
    ['standard', '0.10'],
    ['max', '0.25'],
  ])('resolution %s selects the unit price tier', async (resolution, price) => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ protocol: 'videos' }, 'task_polls:20');
    const { response, body } = await submit(key, { model: 'dh-motion', source_video_url: url('clip.mp4'), content: images(2), face_count: 2, duration: 10, ...(resolution ? { resolution } : {}) });
    expect(response.status).toBe(200);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd(price) * 10n);
    expect(videoSubmits()[0]!.body).toEqual({ model: 'dh-motion-upstream', source_video_url: url('clip.mp4'), content: images(2), face_count: 2, resolution: resolution ?? 'standard', duration: 10 });
    const done = await http.until(`/v1/videos/generations/${body.id}`, key, ended);
    expect(done).toMatchObject({ status: 'succeeded', duration: 10 });
    // Only a resolution that was sent is echoed.
    if (resolution) expect(done.resolution).toBe(resolution);
    else expect(done).not.toHaveProperty('resolution');
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ held: 0n, balance: GRANT - parseUsd(price) * 10n });
  });

  it('takes 7 images; face_count defaults to their number; a flat per_second prices every tier', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ protocol: 'videos' }, 'task_polls:20');
    const { response, body } = await submit(key, { model: 'dh-motion-flat', source_video_url: url('clip.mp4'), content: images(7), resolution: 'max', duration: 2 });
    expect(response.status).toBe(200);
    expect(videoSubmits()[0]!.body).toMatchObject({ face_count: 7 });
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(parseUsd('0.14'));
    await http.until(`/v1/videos/generations/${body.id}`, key, ended);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no images', { content: [] }, /content/],
    ['8 images', { content: someImages(8), face_count: 7 }, /content/],
    ['a text item', { content: [{ type: 'text', text: 'x' }] }, /content/],
    ['face_count 0', { content: someImages(1), face_count: 0 }, /face_count/],
    ['face_count 8', { content: someImages(1), face_count: 8 }, /face_count/],
    ['face_count other than the images', { content: someImages(2), face_count: 3 }, /face_count: must equal the number of images in content \(2\); got 3/],
    ['an unknown tier', { content: someImages(1), resolution: '1080p' }, /resolution/],
    ['no duration', { content: someImages(1), duration: undefined }, /duration: required/],
  ])('refuses %s with 400', async (_name, fields, message) => {
    const { key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'dh-motion', source_video_url: 'https://x.test/v.mp4', duration: 5, ...fields });
    expect(response.status).toBe(400);
    expect(body).toMatchObject({ error: { code: 'invalid_request', message: expect.stringMatching(message) } });
    expect(taskSubmits()).toHaveLength(0);
  });

  it('probes every person image and the source video', async () => {
    const { key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, {
      model: 'dh-motion',
      source_video_url: url('clip.mp4'),
      content: [...images(1), { type: 'image_url', image_url: { url: url('animated.webp') } }],
      duration: 5,
    });
    expect(response.status).toBe(400);
    expect(body).toMatchObject({ error: { message: expect.stringMatching(/^content\[1\]\.image_url: material image/) } });
    expect(taskSubmits()).toHaveLength(0);
  });
});

describe('content on digital-human SKUs (their own fields; issue 33)', () => {
  const person = () => ({ type: 'image_url', image_url: { url: url('photo.jpg') } });

  it('takes a content array on dh-avatar and lip-sync when one is sent, and needs none', async () => {
    const { key } = await h.t.accountWithKey();
    const content = [{ type: 'text', text: 'A cheerful weather report' }];
    const avatar = await submit(key, { model: 'dh-avatar', avatar: 'preset-anna', audio_url: url('voice.mp3'), duration: 5, content });
    expect(avatar.response.status, JSON.stringify(avatar.body)).toBe(200);
    expect(avatar.body).toMatchObject({ status: 'queued', model: 'dh-avatar' });
    const lipsync = await submit(key, { model: 'dh-lipsync-pro', source_video_url: url('clip.mp4'), audio_url: url('voice.mp3'), duration: 5, content });
    expect(lipsync.response.status, JSON.stringify(lipsync.body)).toBe(200);
    expect(videoSubmits()).toHaveLength(2);
  });

  it('is described so in the OpenAPI document: the submission body is any kind of SKU\'s; only the standard one and motion (its images) require content', async () => {
    const doc = (await h.t.gateway.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, { post: { requestBody: { content: { 'application/json': { schema: { anyOf?: Array<{ required?: string[] }> } } } } } }>;
    };
    const kinds = doc.paths['/v1/videos/generations']!.post.requestBody.content['application/json'].schema.anyOf!;
    expect(kinds.filter((k) => k.required?.includes('content')).map((k) => k.required)).toEqual([['model', 'content'], ['model', 'source_video_url', 'content', 'duration']]);
    expect(kinds.some((k) => k.required?.includes('avatar'))).toBe(true);
  });

  it('takes motion transfer person images without any text item, and a text item beside them when sent (passed on)', async () => {
    const { key } = await h.t.accountWithKey();
    const plain = await submit(key, { model: 'dh-motion', source_video_url: url('clip.mp4'), content: [person(), person()], duration: 4 });
    expect(plain.response.status, JSON.stringify(plain.body)).toBe(200);
    const text = { type: 'text', text: 'Both dance' };
    const withText = await submit(key, { model: 'dh-motion', source_video_url: url('clip.mp4'), content: [person(), text, person()], face_count: 2, duration: 4 });
    expect(withText.response.status, JSON.stringify(withText.body)).toBe(200);
    expect(videoSubmits()[1]!.body).toMatchObject({ content: [person(), text, person()], face_count: 2 });
  });
});

describe('Errors rule 8 on digital-human submissions', () => {
  it('answers unknown dh-/clip- models 404 model_not_found; other unknown ids keep the main table\'s 400', async () => {
    const { key } = await h.t.accountWithKey();
    for (const model of ['dh-nope', 'clip-nope']) {
      const { response, body } = await submit(key, { model, duration: 5 });
      expect(response.status, model).toBe(404);
      expect(body).toMatchObject({ error: { code: 'model_not_found', type: 'invalid_request_error' } });
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    }
    const standard = await submit(key, { model: 'vid-nope', content: [{ type: 'text', text: 'x' }] });
    expect(standard.response.status).toBe(400);
    expect(standard.body).toMatchObject({ error: { code: 'model_not_found' } });
  });

  it('answers a dh model the key may not use 403 model_not_allowed; a standard one keeps 400', async () => {
    const onlyStandard = await h.t.accountWithKey({ allowed_models: ['vid-flat'] });
    for (const body of [
      { model: 'dh-lipsync', source_video_url: url('clip.mp4'), audio_url: url('voice.mp3'), duration: 5 },
      { model: 'dh-avatar', avatar: 'preset-anna', audio_url: url('voice.mp3'), duration: 5 },
      { model: 'dh-motion', source_video_url: url('clip.mp4'), content: [{ type: 'image_url', image_url: { url: url('photo.jpg') } }], duration: 5 },
    ]) {
      const dh = await submit(onlyStandard.key, body);
      expect(dh.response.status, body.model).toBe(403);
      expect(dh.body).toMatchObject({ error: { code: 'model_not_allowed' } });
    }
    const onlyDh = await h.t.accountWithKey({ allowed_models: ['dh-lipsync'] });
    const standard = await submit(onlyDh.key, { model: 'vid-flat', content: [{ type: 'text', text: 'x' }] });
    expect(standard.response.status).toBe(400);
    expect(standard.body).toMatchObject({ error: { code: 'model_not_allowed' } });
    expect(taskSubmits()).toHaveLength(0);
  });

  it('answers 401 without a key, 503 without a channel, 402 with no upstream task when the reservation is above the balance', async () => {
    const noKey = await fetch(`${h.baseUrl}/v1/videos/generations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'dh-avatar' }) });
    expect(noKey.status).toBe(401);
    expect(noKey.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const { accountId, key } = await h.t.accountWithKey();
    const noChannel = await submit(key, { model: 'dh-nochannel', avatar: 'preset-anna', audio_url: url('voice.mp3'), duration: 5 });
    expect(noChannel.response.status).toBe(503);
    expect(noChannel.body).toMatchObject({ error: { code: 'no_channel_available' } });
    // 10 s × 5.00 = 50 > 40.44.
    const dear = await submit(key, { model: 'dh-dear', source_video_url: url('clip.mp4'), audio_url: url('voice.mp3'), duration: 10 });
    expect(dear.response.status).toBe(402);
    expect(dear.body).toMatchObject({ error: { code: 'quota_exceeded', type: 'insufficient_quota' } });
    expect(taskSubmits()).toHaveLength(0);
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const rows = await logRows(h, accountId);
    expect(rows.map((r) => r.error_code).sort()).toEqual(['no_channel_available', 'quota_exceeded']);
  });
});

describe('the SSRF guard (a gateway with the default probe: private addresses refused)', () => {
  let guarded: SimulatedGateway;
  beforeAll(async () => {
    guarded = await startTaskHarness(config);
  });
  afterAll(() => guarded.close());

  it('refuses loopback URLs with a 400 before any money moves, on avatars and digital-human videos alike', async () => {
    const { accountId, key } = await guarded.t.accountWithKey();
    const g = api(guarded);
    const avatarAnswer = await g.post('/v1/videos/avatars', key, { name: 'A', source_url: url('photo.jpg') });
    expect(avatarAnswer.status).toBe(400);
    expect(await avatarAnswer.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringMatching(/^source_url: .*public addresses/) } });
    const lipsync = await g.post('/v1/videos/generations', key, { model: 'dh-lipsync', source_video_url: url('clip.mp4'), audio_url: url('voice.mp3'), duration: 5 });
    expect(lipsync.status).toBe(400);
    expect(await lipsync.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringMatching(/public addresses/) } });
    expect(guarded.sim.requests).toHaveLength(0);
    expect(await guarded.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });
  });
});
