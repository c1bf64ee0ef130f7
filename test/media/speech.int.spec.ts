/**
 * Text to speech: `POST /v1/audio/speech` synchronous (the audio bytes, as OpenAI's endpoint) and
 * asynchronous (`async: true`: a speech task whose audio the gateway hosts), its polls and list. On
 * PGlite, or on Postgres and Redis when DATABASE_URL / REDIS_URL are set.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { AUDIO_CONTENT_TYPES, encodeAudio, speechSamples, type AudioFormat } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { ODD_PRICE, FAST_SPEECH, TTS_PRICE, channelOf, speechCalls, speechCharge, speechConfig } from './speech-support';
import { api, ledgerEvents, logRows, startTaskHarness } from './task-support';

let h: SimulatedGateway;
let http: ReturnType<typeof api>;
beforeAll(async () => {
  h = await startTaskHarness(speechConfig, { speechTimings: FAST_SPEECH });
  http = api(h);
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');
const PRICE = parseUsd(TTS_PRICE);
const wallet = (accountId: string) => h.t.gateway.ledger.wallet(accountId);
const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
const audioOf = (format: AudioFormat, characters: number, speed = 1) => encodeAudio(format, speechSamples(characters, speed));
const ended = (b: Record<string, unknown>) => b.status !== 'pending';

async function speak(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await http.post('/v1/audio/speech', key, body, headers);
  const bytes = Buffer.from(await response.arrayBuffer());
  return { response, bytes, json: () => JSON.parse(bytes.toString('utf8')) as Record<string, any> };
}

describe('POST /v1/audio/speech (synchronous)', () => {
  it('answers the openai SDK with the audio bytes and content type the upstream sent, and bills per character', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const input = 'Hello from the gateway.';
    const raw = await sdk(key).audio.speech.create({ model: 'tts-a', input, voice: 'alloy', response_format: 'wav' }).asResponse();
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('audio/wav');
    expect(raw.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const bytes = Buffer.from(await raw.arrayBuffer());
    // The simulator's formula: 44-byte header + 2 bytes a sample, 1440 samples a character at speed 1.
    expect(bytes.length).toBe(44 + 2 * Math.round(1440 * input.length));
    expect(bytes.equals(audioOf('wav', input.length))).toBe(true);

    const [sent] = speechCalls(h);
    expect(channelOf(sent!.path)).toBe('sp-a');
    expect(sent!.apiKey).toBe('key-sp-a');
    expect(sent!.body).toEqual({ model: 'tts-a-upstream', input, voice: 'alloy', response_format: 'wav' });

    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - speechCharge(input.length, PRICE));
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({
      model: 'tts-a',
      status: 'success',
      unit_type: 'character',
      unit_count: input.length,
      attempts_count: 1,
      request_id: raw.headers.get('x-gateway-trace'),
      task_id: null,
    });
    expect(parseUsd(String(row!.cost_usd))).toBe(speechCharge(input.length, PRICE));
  });

  it('defaults to mp3, takes {id} voices and speed, passes unknown fields upstream', async () => {
    const { key } = await h.t.accountWithKey();
    const response = await sdk(key).audio.speech.create({ model: 'tts-a', input: 'Quick.', voice: { id: 'nova' }, speed: 2, instructions: 'whisper' });
    expect(response.headers.get('content-type')).toBe(AUDIO_CONTENT_TYPES.mp3);
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(bytes.equals(audioOf('mp3', 6, 2))).toBe(true);
    expect(speechCalls(h)[0]!.body).toEqual({ model: 'tts-a-upstream', input: 'Quick.', voice: { id: 'nova' }, speed: 2, instructions: 'whisper' });
  });

  it('counts Unicode code points, rounding the charge up to the nano-dollar', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    // 👋🏽 is two code points (four UTF-16 units); 世界 two; é one.
    const input = '👋🏽 héllo 世界 🎉';
    const characters = [...input].length;
    expect(characters).toBe(13);
    expect(input.length).toBe(16);
    const { response, bytes } = await speak(key, { model: 'tts-odd', input, voice: 'alloy', response_format: 'pcm' });
    expect(response.status).toBe(200);
    expect(bytes.length).toBe(2 * speechSamples(characters));
    // 13 × 1,000,001 / 1000 = 13,000.013 nano-dollars: 13,001 charged.
    const charge = speechCharge(characters, parseUsd(ODD_PRICE));
    expect(charge).toBe(13_001n);
    expect((await wallet(accountId)).balance).toBe(GRANT - charge);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ unit_type: 'character', unit_count: characters });

    // 4,096 emoji are 4,096 characters (8,192 UTF-16 units): within the limit.
    const long = await speak(key, { model: 'tts-odd', input: '🎉'.repeat(4096), voice: 'alloy', response_format: 'aac' });
    expect(long.response.status).toBe(200);
    expect(long.response.headers.get('content-type')).toBe('audio/aac');
    expect(long.bytes.equals(audioOf('aac', 4096))).toBe(true);
  });

  it('fails over on a 5xx and a reset connection, billing only the channel that answered; a hop time-out ends the call (no second synthesis)', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_503');
    h.sim.enqueueFor({ pathPrefix: '/sp-b' }, 'reset_connection');
    const { response, bytes } = await speak(key, { model: 'tts-a', input: 'third time', voice: 'alloy', response_format: 'flac' });
    expect(response.status).toBe(200);
    expect(bytes.equals(audioOf('flac', 10))).toBe(true);
    expect(speechCalls(h).map((r) => channelOf(r.path))).toEqual(['sp-a', 'sp-b', 'sp-c']);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'success', attempts_count: 3 });
    expect((await wallet(accountId)).balance).toBe(GRANT - speechCharge(10, PRICE));

    // sp-a took the request and never answered: it may be synthesising it, so no other channel gets it.
    h.sim.reset();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'hang');
    const slow = await speak(key, { model: 'tts-a', input: 'later', voice: 'alloy', response_format: 'opus' });
    expect(slow.response.status).toBe(504);
    expect(slow.json()).toMatchObject({ error: { code: 'upstream_timeout' } });
    expect(speechCalls(h).map((r) => channelOf(r.path))).toEqual(['sp-a']);
    expect((await wallet(accountId)).balance).toBe(GRANT - speechCharge(10, PRICE));
  });

  it('passes an upstream 4xx through in its own shape with nothing billed; every channel failing is the last one’s answer', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_429');
    const limited = await speak(key, { model: 'tts-a', input: 'x', voice: 'alloy' });
    expect(limited.response.status).toBe(429);
    expect(limited.response.headers.get('retry-after')).toBe('1');
    expect(limited.response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(limited.json()).toMatchObject({ error: { message: expect.any(String), type: expect.any(String) } });
    expect(speechCalls(h)).toHaveLength(1);

    h.sim.reset();
    const spoken = await speak(key, { model: 'tts-a', input: 'x', voice: 'alloy', stream_format: 'audio', extra: { nested: true } });
    expect(spoken.response.status).toBe(200);
    expect(speechCalls(h)[0]!.body).toMatchObject({ stream_format: 'audio', extra: { nested: true } });
    // The upstream's OpenAI-shaped 400 comes through unchanged.
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_400');
    const bad = await speak(key, { model: 'tts-a', input: 'x', voice: 'alloy' });
    expect(bad.response.status).toBe(400);
    expect(bad.json().error).toMatchObject({ message: expect.any(String), type: 'invalid_request_error' });

    h.sim.reset();
    for (const prefix of ['/sp-a', '/sp-b', '/sp-c']) h.sim.enqueueFor({ pathPrefix: prefix }, 'http_500');
    const down = await speak(key, { model: 'tts-a', input: 'x', voice: 'alloy' });
    expect(down.response.status).toBe(500);
    expect(speechCalls(h)).toHaveLength(3);

    h.sim.reset();
    for (const prefix of ['/sp-a', '/sp-b', '/sp-c']) h.sim.enqueueFor({ pathPrefix: prefix }, 'reset_connection');
    const unreachable = await speak(key, { model: 'tts-a', input: 'x', voice: 'alloy' });
    expect(unreachable.response.status).toBe(502);
    expect(unreachable.json()).toMatchObject({ error: { code: 'upstream_unreachable', type: 'api_error' } });

    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - speechCharge(1, PRICE));
    const rows = await logRows(h, accountId);
    expect(rows.map((r) => [r.status, r.error_code, r.attempts_count]).sort()).toEqual(
      [
        ['error', 'rate_limit_exceeded', 1],
        ['error', 'invalid_request', 1],
        ['error', 'upstream_error', 3],
        ['error', 'upstream_unreachable', 3],
        ['success', null, 1],
      ].sort(),
    );
    expect(rows.filter((r) => r.status === 'error').every((r) => r.cost_usd === '0.00' && r.unit_type === 'character')).toBe(true);
  });

  it('ends the call when the client leaves: nothing billed, a client_disconnected row', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'slow_first_byte:1000');
    const controller = new AbortController();
    const pending = fetch(`${h.baseUrl}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-a', input: 'gone', voice: 'alloy' }),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 200);
    await expect(pending).rejects.toThrow();
    const deadline = Date.now() + 5_000;
    let rows = await logRows(h, accountId);
    while (rows.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      rows = await logRows(h, accountId);
    }
    expect(rows).toEqual([expect.objectContaining({ status: 'error', error_code: 'client_disconnected', cost_usd: '0.00', attempts_count: 1 })]);
    // The upstream call was ended with the client, not waited for.
    expect(rows[0]!.latency_ms as number).toBeLessThan(900);
    expect(speechCalls(h)).toHaveLength(1);
    const w = await wallet(accountId);
    expect(w.balance).toBe(GRANT);
    expect(w.held).toBe(0n);
  });

  it('refuses before any upstream call: 400s of the body, unknown models, no channel, and 402 above the balance', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const cases: Array<[Record<string, unknown>, number, string, RegExp]> = [
      [{ model: 'tts-a', voice: 'alloy' }, 400, 'invalid_request', /input/],
      [{ model: 'tts-a', input: '', voice: 'alloy' }, 400, 'invalid_request', /input/],
      [{ model: 'tts-a', input: 'a'.repeat(4097), voice: 'alloy' }, 400, 'invalid_request', /input: must be at most 4096 characters/],
      [{ model: 'tts-a', input: 'a' }, 400, 'invalid_request', /voice/],
      [{ model: 'tts-a', input: 'a', voice: {} }, 400, 'invalid_request', /voice/],
      [{ model: 'tts-a', input: 'a', voice: 'alloy', response_format: 'ogg' }, 400, 'invalid_request', /response_format/],
      [{ model: 'tts-a', input: 'a', voice: 'alloy', speed: 4.5 }, 400, 'invalid_request', /speed/],
      [{ model: 'tts-a', input: 'a', voice: 'alloy', speed: 0.1 }, 400, 'invalid_request', /speed/],
      [{ model: 'tts-a', input: 'a', voice: 'alloy', async: 'yes' }, 400, 'invalid_request', /async/],
      [{ model: 'no-such-tts', input: 'a', voice: 'alloy' }, 400, 'model_not_found', /no-such-tts/],
      [{ model: 'tts-none', input: 'a', voice: 'alloy' }, 503, 'no_channel_available', /speech/],
      [{ model: 'chat-x', input: 'a', voice: 'alloy' }, 503, 'no_channel_available', /speech/],
      // 3 characters × 20,000 USD / 1000 = 60 USD > 40.44.
      [{ model: 'tts-dear', input: 'abc', voice: 'alloy' }, 402, 'quota_exceeded', /./],
      [{ model: 'tts-dear', input: 'abc', voice: 'alloy', async: true }, 402, 'quota_exceeded', /./],
    ];
    for (const [body, status, code, message] of cases) {
      const { response, json } = await speak(key, body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      expect(json().error.code).toBe(code);
      expect(json().error.message).toMatch(message);
    }
    expect(speechCalls(h)).toHaveLength(0);
    expect((await wallet(accountId)).balance).toBe(GRANT);
    const rows = await logRows(h, accountId);
    expect(rows).toHaveLength(cases.length);
    expect(rows.every((r) => r.status === 'rejected' && r.cost_usd === '0.00' && r.unit_type === 'character')).toBe(true);
    expect(rows.filter((r) => r.error_code === 'quota_exceeded')).toHaveLength(2);
    // No task was made by the refused async call.
    expect(((await (await http.get('/v1/audio/speech', key)).json()) as { data: unknown[] }).data).toHaveLength(0);
  });

  it('replays an Idempotency-Key with the same bytes and content type, once billed', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'tts-a', input: 'say it once', voice: 'alloy', response_format: 'wav' };
    const first = await speak(key, body, { 'idempotency-key': 'speech-1' });
    const again = await speak(key, body, { 'idempotency-key': 'speech-1' });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.response.headers.get('content-type')).toBe('audio/wav');
    expect(again.response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(first.bytes.equals(audioOf('wav', 11))).toBe(true);
    // Through the SDK as well.
    const sdkReplay = await sdk(key).audio.speech.create(body as never, { headers: { 'idempotency-key': 'speech-1' } }).asResponse();
    expect(sdkReplay.headers.get('idempotency-replayed')).toBe('true');
    expect(Buffer.from(await sdkReplay.arrayBuffer()).equals(first.bytes)).toBe(true);
    expect(speechCalls(h)).toHaveLength(1);
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(1);
    expect((await wallet(accountId)).balance).toBe(GRANT - speechCharge(11, PRICE));

    const other = await speak(key, { ...body, input: 'say it twice' }, { 'idempotency-key': 'speech-1' });
    expect(other.response.status).toBe(409);
    expect(other.json()).toMatchObject({ error: { code: 'idempotency_key_reuse' } });
    // A failure does not occupy the key.
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_400');
    expect((await speak(key, { ...body, input: 'fails first' }, { 'idempotency-key': 'speech-2' })).response.status).toBe(400);
    expect((await speak(key, { ...body, input: 'fails first' }, { 'idempotency-key': 'speech-2' })).response.status).toBe(200);
  });

  it('replays an audio answer above the idempotency store’s 4 MiB default whole (only b64_json images go unreplayed)', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    // 1,500 characters of wav: 44 + 2 × 1440 × 1500 bytes, about 4.1 MiB.
    const body = { model: 'tts-a', input: 'a'.repeat(1500), voice: 'alloy', response_format: 'wav' };
    const first = await speak(key, body, { 'idempotency-key': 'long-1' });
    expect(first.response.status).toBe(200);
    expect(first.bytes.length).toBe(44 + 2 * 1440 * 1500);
    const again = await speak(key, body, { 'idempotency-key': 'long-1' });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(speechCalls(h)).toHaveLength(1);
    expect((await wallet(accountId)).balance).toBe(GRANT - speechCharge(1500, PRICE));
  });
});

describe('POST /v1/audio/speech with async: true', () => {
  it('answers pending at once, hosts the audio for 24 hours, and settles per character with the task’s row', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const input = 'An asynchronous hello.';
    const { response, json } = await speak(key, { model: 'tts-a', input, voice: 'alloy', response_format: 'wav', async: true });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const task = json();
    expect(Object.keys(task).sort()).toEqual(['created_at', 'id', 'model', 'status']);
    expect(task).toMatchObject({ status: 'pending', model: 'tts-a' });
    expect(task.id).toMatch(/^[0-9a-f-]{36}$/);

    const done = await http.until(`/v1/audio/speech/${task.id}`, key, ended);
    expect(done).toMatchObject({ id: task.id, status: 'succeeded', model: 'tts-a', created_at: task.created_at, response_format: 'wav', content_type: 'audio/wav', characters: input.length });
    expect(done.updated_at as number).toBeGreaterThanOrEqual(task.created_at);
    // 24 hours from when the audio was stored, within the run.
    expect(done.expires_at as number).toBeGreaterThanOrEqual(task.created_at + 24 * 3600);
    expect(done.expires_at as number).toBeLessThanOrEqual((done.updated_at as number) + 24 * 3600);
    expect(done).not.toHaveProperty('error');
    const url = new URL(String(done.audio_url));
    expect(url.origin).toBe(h.baseUrl);
    expect(url.pathname).toMatch(new RegExp(`^/v1/media/files/media/${accountId}/${task.id}/speech\\.wav$`));

    // The hosted link needs no key: its signature is the credential.
    const download = await fetch(String(done.audio_url));
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await download.arrayBuffer()).equals(audioOf('wav', input.length))).toBe(true);

    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - speechCharge(input.length, PRICE));
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({
      status: 'success',
      task_id: task.id,
      unit_type: 'character',
      unit_count: input.length,
      attempts_count: 1,
      submitted_at: task.created_at,
      result_urls: [done.audio_url],
      result_expires_at: done.expires_at,
      request_id: response.headers.get('x-gateway-trace'),
    });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-2)).toEqual(['FundsReserved', 'HoldSettled']);
  });

  it('fails and refunds when no channel speaks; failover still applies; a 4xx ends it at once', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_502');
    const survived = (await speak(key, { model: 'tts-a', input: 'second channel', voice: 'alloy', async: true })).json();
    const ok = await http.until(`/v1/audio/speech/${survived.id}`, key, ended);
    expect(ok.status).toBe('succeeded');
    expect(speechCalls(h).map((r) => channelOf(r.path))).toEqual(['sp-a', 'sp-b']);

    h.sim.reset();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_400');
    const submitted = await speak(key, { model: 'tts-a', input: 'refused upstream', voice: 'alloy', async: true });
    expect(submitted.response.status).toBe(200);
    const failed = await http.until(`/v1/audio/speech/${submitted.json().id}`, key, ended);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'invalid_request', message: expect.any(String) } });
    expect(failed).not.toHaveProperty('audio_url');
    expect(speechCalls(h)).toHaveLength(1);

    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - speechCharge('second channel'.length, PRICE));
    const rows = await logRows(h, accountId);
    expect(rows.find((r) => r.task_id === submitted.json().id)).toMatchObject({ status: 'error', error_code: 'invalid_request', cost_usd: '0.00', attempts_count: 1 });
    expect(rows.find((r) => r.task_id === survived.id)).toMatchObject({ status: 'success', attempts_count: 2 });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-1)).toEqual(['HoldReleased']);
  });

  it('a run interrupted by the shutdown is failed and refunded', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'slow_first_byte:1000');
    const task = (await speak(key, { model: 'tts-a', input: 'never finished', voice: 'alloy', async: true })).json();
    expect(h.t.gateway.workflows.background.running(task.id)).toBe(true);
    // What the shutdown does to the runs still going after its grace.
    await h.t.gateway.workflows.background.close(0);
    const failed = await http.until(`/v1/audio/speech/${task.id}`, key, ended);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'gateway_interrupted' } });
    const w = await wallet(accountId);
    expect(w.balance).toBe(GRANT);
    expect(w.held).toBe(0n);
  });

  it('replays an Idempotency-Key with the same task', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'tts-a', input: 'only one task', voice: 'alloy', async: true };
    const first = (await speak(key, body, { 'idempotency-key': 'async-1' })).json();
    const again = await speak(key, body, { 'idempotency-key': 'async-1' });
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.json().id).toBe(first.id);
    await http.until(`/v1/audio/speech/${first.id}`, key, ended);
    expect(speechCalls(h)).toHaveLength(1);
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(1);
  });
});

describe('GET /v1/audio/speech', () => {
  it('shows tasks to their owner only, newest first, filtered by status; others are 404 not_found', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    const ok = (await speak(a.key, { model: 'tts-a', input: 'one', voice: 'alloy', async: true })).json();
    // A marker in the input: the upstream refuses this one request, whenever its run sends it.
    const bad = (await speak(a.key, { model: 'tts-a', input: 'two [[sim:http_400]]', voice: 'alloy', async: true })).json();
    await http.until(`/v1/audio/speech/${ok.id}`, a.key, ended);
    await http.until(`/v1/audio/speech/${bad.id}`, a.key, ended);
    // A synchronous call makes no task.
    expect((await speak(a.key, { model: 'tts-a', input: 'three', voice: 'alloy' })).response.status).toBe(200);

    const foreign = await http.get(`/v1/audio/speech/${ok.id}`, b.key);
    expect(foreign.status).toBe(404);
    expect(foreign.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(await foreign.json()).toMatchObject({ error: { code: 'not_found', type: 'invalid_request_error' } });
    expect((await http.get('/v1/audio/speech/00000000-0000-0000-0000-000000000000', a.key)).status).toBe(404);
    expect((await http.get('/v1/audio/speech/not-a-task', a.key)).status).toBe(404);

    const list = async (query: string, key = a.key) => {
      const response = await http.get(`/v1/audio/speech${query}`, key);
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      return ((await response.json()) as { data: Array<{ id: string; status: string; created_at: number }> }).data;
    };
    const all = await list('');
    const order = all.map((t) => [t.created_at, t.id] as const);
    expect(order).toEqual([...order].sort((x, y) => y[0] - x[0] || (y[1] > x[1] ? 1 : -1)));
    expect(new Set(all.map((t) => t.id))).toEqual(new Set([ok.id, bad.id]));
    expect(all.find((t) => t.id === ok.id)).toMatchObject({ status: 'succeeded', audio_url: expect.any(String) });
    expect(all.find((t) => t.id === bad.id)).toMatchObject({ status: 'failed', error: { code: 'invalid_request' } });
    expect((await list('?status=succeeded')).map((t) => t.id)).toEqual([ok.id]);
    expect((await list('?status=failed')).map((t) => t.id)).toEqual([bad.id]);
    expect(await list('?status=pending')).toEqual([]);
    expect(await list('?status=failed,succeeded&limit=1')).toHaveLength(1);
    expect(await list('?status=all&limit=500')).toHaveLength(2);
    expect(await list('', b.key)).toEqual([]);
    const invalid = await http.get('/v1/audio/speech?status=done', a.key);
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ error: { code: 'invalid_request' } });
  });
});
