/**
 * Voice clones: `POST /v1/audio/voices` (= `/v1/audio/voice-clone`) billed per voice, `GET /v1/audio/voices`
 * with the config's presets, and speech with a cloned voice (its upstream id, on the channel that cloned it
 * only). On PGlite, or on Postgres and Redis when DATABASE_URL / REDIS_URL are set.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { encodeAudio, speechSamples } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { FAST_SPEECH, TTS_PRICE, VOICE_PRICE, channelOf, cloneCalls, speechCalls, speechCharge, speechConfig } from './speech-support';
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
const RECORDING = 'https://example.com/recordings/me.wav';
const PRESETS = [
  { id: 'alloy', name: 'Alloy' },
  { id: 'nova', name: 'Nova' },
];
const wallet = (accountId: string) => h.t.gateway.ledger.wallet(accountId);

async function call(path: string, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await http.post(path, key, body, headers);
  return { response, body: (await response.json()) as Record<string, any> };
}
const clone = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => call('/v1/audio/voices', key, body, headers);
const voices = async (key: string, query = '') => (await (await http.get(`/v1/audio/voices${query}`, key)).json()) as { voices: Array<Record<string, any>>; presets: unknown[] };

describe('POST /v1/audio/voices', () => {
  it('clones through the first speech model, bills its per_voice, answers ready and lists it with the presets', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await clone(key, { name: 'My voice', audio_url: RECORDING });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(Object.keys(body).sort()).toEqual(['created_at', 'id', 'model', 'name', 'status']);
    expect(body).toMatchObject({ name: 'My voice', status: 'ready', model: 'tts-a', created_at: expect.any(Number) });
    expect(body.id).toMatch(/^voice_[0-9a-f-]{36}$/);
    const [sent] = cloneCalls(h);
    expect(channelOf(sent!.path)).toBe('sp-a');
    expect(sent!.apiKey).toBe('key-sp-a');
    expect(sent!.body).toEqual({ name: 'My voice', audio_url: RECORDING });

    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - parseUsd(VOICE_PRICE));
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({
      model: 'tts-a',
      status: 'success',
      unit_type: 'voice',
      unit_count: 1,
      cost_usd: '0.50',
      attempts_count: 1,
      task_id: body.id.slice('voice_'.length),
      request_id: response.headers.get('x-gateway-trace'),
    });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-2)).toEqual(['FundsReserved', 'HoldSettled']);

    // Listed at once (the answer waited for the views), with the config's presets.
    const listed = await voices(key);
    expect(listed).toEqual({ voices: [{ id: body.id, name: 'My voice', status: 'ready', created_at: body.created_at, model: 'tts-a' }], presets: PRESETS });
    const other = await h.t.accountWithKey();
    expect(await voices(other.key)).toEqual({ voices: [], presets: PRESETS });
  });

  it('/v1/audio/voice-clone is the same; `model` picks the price; failover to the next channel', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_500');
    const { response, body } = await call('/v1/audio/voice-clone', key, { name: 'Second', audio_url: RECORDING, model: 'tts-odd' });
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ status: 'ready', model: 'tts-odd', name: 'Second' });
    expect(cloneCalls(h).map((r) => channelOf(r.path))).toEqual(['sp-a', 'sp-b']);
    expect((await wallet(accountId)).balance).toBe(GRANT - parseUsd('0.25'));
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ model: 'tts-odd', attempts_count: 2, unit_type: 'voice', cost_usd: '0.25' });
  });

  it('refunds a failed clone and passes the upstream error through; the voice is listed as failed', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_400');
    const refused = await clone(key, { name: 'Refused', audio_url: RECORDING });
    expect(refused.response.status).toBe(400);
    expect(refused.response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(refused.body.error).toMatchObject({ message: expect.any(String), type: 'invalid_request_error' });
    expect(cloneCalls(h)).toHaveLength(1);

    for (const prefix of ['/sp-a', '/sp-b', '/sp-c']) h.sim.enqueueFor({ pathPrefix: prefix }, 'http_503');
    const down = await clone(key, { name: 'Down', audio_url: RECORDING });
    expect(down.response.status).toBe(503);
    expect(cloneCalls(h)).toHaveLength(4);

    for (const prefix of ['/sp-a', '/sp-b', '/sp-c']) h.sim.enqueueFor({ pathPrefix: prefix }, 'reset_connection');
    const unreachable = await clone(key, { name: 'Unreachable', audio_url: RECORDING });
    expect(unreachable.response.status).toBe(502);
    expect(unreachable.body).toMatchObject({ error: { code: 'upstream_unreachable' } });

    const w = await wallet(accountId);
    expect(w.balance).toBe(GRANT);
    expect(w.held).toBe(0n);
    const rows = await logRows(h, accountId);
    expect(rows.map((r) => [r.status, r.error_code, r.attempts_count, r.cost_usd]).sort()).toEqual(
      [
        ['error', 'invalid_request', 1, '0.00'],
        ['error', 'upstream_error', 3, '0.00'],
        ['error', 'upstream_unreachable', 3, '0.00'],
      ].sort(),
    );
    const listed = await voices(key);
    // Newest first; within one second by id, so compared as a set.
    const times = listed.voices.map((v) => v.created_at as number);
    expect(times).toEqual([...times].sort((x, y) => y - x));
    expect(listed.voices.map((v) => [v.name, v.status, v.error?.code]).sort()).toEqual(
      [
        ['Unreachable', 'failed', 'upstream_unreachable'],
        ['Down', 'failed', 'upstream_error'],
        ['Refused', 'failed', 'invalid_request'],
      ].sort(),
    );
    expect((await voices(key, '?status=ready')).voices).toEqual([]);
    expect((await voices(key, '?status=failed&limit=1')).voices).toHaveLength(1);
    expect((await http.get('/v1/audio/voices?status=gone', key)).status).toBe(400);
  });

  it('refuses before any upstream call: invalid bodies, models, and 402 above the balance', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const cases: Array<[Record<string, unknown>, number, string, RegExp]> = [
      [{ audio_url: RECORDING }, 400, 'invalid_request', /name/],
      [{ name: '', audio_url: RECORDING }, 400, 'invalid_request', /name/],
      [{ name: 'x'.repeat(65), audio_url: RECORDING }, 400, 'invalid_request', /name: must be at most 64 characters/],
      [{ name: 'x' }, 400, 'invalid_request', /audio_url/],
      [{ name: 'x', audio_url: 'ftp://example.com/a.wav' }, 400, 'invalid_request', /audio_url: must be a public http\(s\) URL/],
      [{ name: 'x', audio_url: 'data:audio/wav;base64,AAAA' }, 400, 'invalid_request', /audio_url/],
      [{ name: 'x', audio_url: RECORDING, model: 'no-such' }, 400, 'model_not_found', /no-such/],
      [{ name: 'x', audio_url: RECORDING, model: 'tts-none' }, 503, 'no_channel_available', /speech/],
      [{ name: 'x', audio_url: RECORDING, model: 'chat-x' }, 503, 'no_channel_available', /speech/],
      [{ name: 'x', audio_url: RECORDING, model: 'tts-dear' }, 402, 'quota_exceeded', /./],
    ];
    for (const [body, status, code, message] of cases) {
      const answer = await clone(key, body);
      expect(answer.response.status, JSON.stringify(body)).toBe(status);
      expect(answer.response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      expect(answer.body.error.code).toBe(code);
      expect(answer.body.error.message).toMatch(message);
    }
    // A name of 64 characters is one (emoji count once each).
    expect((await clone(key, { name: '🎤'.repeat(64), audio_url: RECORDING, model: 'tts-odd' })).response.status).toBe(200);
    expect(cloneCalls(h)).toHaveLength(1);
    const rows = await logRows(h, accountId);
    expect(rows.filter((r) => r.status === 'rejected')).toHaveLength(cases.length);
    expect(rows.filter((r) => r.status === 'rejected').every((r) => r.unit_type === 'voice' && r.cost_usd === '0.00')).toBe(true);
    expect((await voices(key)).voices).toHaveLength(1);

    // A key limited to other models: the default is the first speech model it may use.
    const limited = await h.t.accountWithKey({ allowed_models: ['tts-odd'] });
    expect((await clone(limited.key, { name: 'mine', audio_url: RECORDING })).body).toMatchObject({ model: 'tts-odd', status: 'ready' });
    const none = await h.t.accountWithKey({ allowed_models: ['chat-x'] });
    expect((await clone(none.key, { name: 'mine', audio_url: RECORDING })).body).toMatchObject({ error: { code: 'model_not_allowed' } });
  });

  it('replays an Idempotency-Key: the same voice, one clone, one charge', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { name: 'Once', audio_url: RECORDING };
    const first = await clone(key, body, { 'idempotency-key': 'clone-1' });
    const again = await clone(key, body, { 'idempotency-key': 'clone-1' });
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    // The other path is another request: the same key there is a different request.
    expect((await call('/v1/audio/voice-clone', key, body, { 'idempotency-key': 'clone-1' })).response.status).toBe(409);
    expect(cloneCalls(h)).toHaveLength(1);
    expect((await wallet(accountId)).balance).toBe(GRANT - parseUsd(VOICE_PRICE));
    expect((await voices(key)).voices).toHaveLength(1);
  });
});

describe('speech with a cloned voice', () => {
  it('goes to the channel that cloned it, with the upstream’s voice id, as a string or {id}, sync and async', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    // Cloned on sp-b (sp-a failed): its speech goes to sp-b only, though sp-a comes first.
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_503');
    const voice = (await clone(key, { name: 'Mine', audio_url: RECORDING })).body;
    const upstreamId = 'voice_sim000001';
    expect(cloneCalls(h).map((r) => channelOf(r.path))).toEqual(['sp-a', 'sp-b']);

    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const audio = await openai.audio.speech.create({ model: 'tts-a', input: 'In my own voice.', voice: voice.id, response_format: 'wav' });
    expect(Buffer.from(await audio.arrayBuffer()).equals(encodeAudio('wav', speechSamples(16)))).toBe(true);
    const byObject = await openai.audio.speech.create({ model: 'tts-odd', input: 'Again.', voice: { id: voice.id } });
    expect(byObject.status).toBe(200);
    const spoken = speechCalls(h);
    expect(spoken.map((r) => channelOf(r.path))).toEqual(['sp-b', 'sp-b']);
    expect(spoken[0]!.body).toMatchObject({ voice: upstreamId, model: 'tts-a-upstream' });
    expect(spoken[1]!.body).toMatchObject({ voice: { id: upstreamId }, model: 'tts-odd-upstream' });

    const task = (await call('/v1/audio/speech', key, { model: 'tts-a', input: 'Later.', voice: voice.id, async: true })).body;
    expect((await http.until(`/v1/audio/speech/${task.id}`, key, (b) => b.status !== 'pending')).status).toBe('succeeded');
    expect(speechCalls(h).map((r) => channelOf(r.path))).toEqual(['sp-b', 'sp-b', 'sp-b']);
    expect(speechCalls(h)[2]!.body).toMatchObject({ voice: upstreamId });

    // Its channel failing is the answer: no other channel knows the voice.
    h.sim.enqueueFor({ pathPrefix: '/sp-b' }, 'http_503');
    const failed = await call('/v1/audio/speech', key, { model: 'tts-a', input: 'x', voice: voice.id });
    expect(failed.response.status).toBe(503);
    expect(speechCalls(h).map((r) => channelOf(r.path))).toEqual(['sp-b', 'sp-b', 'sp-b', 'sp-b']);

    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - parseUsd(VOICE_PRICE) - speechCharge(16, parseUsd(TTS_PRICE)) - speechCharge(6, parseUsd('0.001000001')) - speechCharge(6, parseUsd(TTS_PRICE)));
  });

  it('refuses a voice of the gateway’s form that is not the account’s, not ready, or not on the model’s channels; presets pass as they are', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    const voice = (await clone(a.key, { name: 'A', audio_url: RECORDING })).body;
    const speak = (key: string, body: Record<string, unknown>) => call('/v1/audio/speech', key, { input: 'x', model: 'tts-a', ...body });

    const foreign = await speak(b.key, { voice: voice.id });
    expect(foreign.response.status).toBe(400);
    expect(foreign.body.error).toMatchObject({ code: 'invalid_request', message: `voice: no voice ${voice.id} exists for this account` });
    const unknown = await speak(a.key, { voice: { id: 'voice_00000000-0000-0000-0000-000000000000' } });
    expect(unknown.body.error.message).toMatch(/no voice/);
    h.sim.enqueueFor({ pathPrefix: '/sp-a' }, 'http_400');
    expect((await clone(a.key, { name: 'broken', audio_url: RECORDING })).response.status).toBe(400);
    const broken = (await voices(a.key)).voices.find((v) => v.name === 'broken')!;
    expect((await speak(a.key, { voice: broken.id })).body.error.message).toMatch(/not ready \(failed\)/);
    // tts-b is served by sp-c only; the voice lives on sp-a.
    const elsewhere = await speak(a.key, { voice: voice.id, model: 'tts-b' });
    expect(elsewhere.response.status).toBe(400);
    expect(elsewhere.body.error.message).toMatch(/upstream that cloned it/);
    expect(speechCalls(h)).toHaveLength(0);

    // A preset, or an id of the upstream's own, goes upstream as is.
    for (const v of ['alloy', 'voice_sim000001', 'voice_not-a-uuid'])
      expect((await http.post('/v1/audio/speech', a.key, { input: 'x', model: 'tts-a', voice: v })).status).toBe(200);
    expect(speechCalls(h).map((r) => (r.body as { voice: unknown }).voice)).toEqual(['alloy', 'voice_sim000001', 'voice_not-a-uuid']);
    const rows = await logRows(h, b.accountId);
    expect(rows).toEqual([expect.objectContaining({ status: 'rejected', error_code: 'invalid_request', unit_type: 'character' })]);
  });
});
