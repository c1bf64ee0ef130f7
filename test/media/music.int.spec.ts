import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TaskState } from '../../src/commands/task/decider';
import type { GatewayConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { musicDelivery } from '../../src/tasks/families/music';
import { DEFAULT_SONG_SECONDS, lyricsFor, type Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { api, ledgerEvents, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

const PRICE = parseUsd('0.10');
const PRICE_B = parseUsd('0.25');
const GRANT = parseUsd('40.44');

function config(sim: Simulator): GatewayConfig {
  const served = ['mus-a', 'mus-b', 'mus-dear'];
  return {
    models: [
      mediaModel({ id: 'mus-a', kind: 'music', price: { per_call: '0.10' } }),
      mediaModel({ id: 'mus-b', kind: 'music', price: { per_call: '0.25' } }),
      mediaModel({ id: 'mus-dear', kind: 'music', price: { per_call: '50.00' } }),
      mediaModel({ id: 'mus-other', kind: 'music', price: { per_call: '0.10' } }),
      mediaModel({ id: 'mus-nochannel', kind: 'music', price: { per_call: '0.10' } }),
      mediaModel({ id: 'vid-x', kind: 'video', price: { per_second: '0.10' } }),
    ],
    channels: [
      mediaChannel(sim, 'mus-a', 'music', served, 0),
      mediaChannel(sim, 'mus-b', 'music', served, 1),
      mediaChannel(sim, 'mus-c', 'music', ['mus-other'], 0),
      mediaChannel(sim, 'vid', 'videos', ['vid-x'], 0),
    ],
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

/** Task submits the simulator saw (since a mark: `reset()` would forget the tasks a follow-up works on). */
const submits = (from = 0) => h.sim.requests.slice(from).filter((r) => r.method === 'POST' && r.path.endsWith('/api/v3/contents/generations/tasks'));
const mark = () => h.sim.requests.length;
const ended = (b: Record<string, unknown>) => b.status !== 'processing';
type Json = Record<string, unknown>;

async function post(path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await http.post(path, key, body, headers);
  return { response, body: (await response.json()) as Json };
}
const submit = (key: string, body: unknown, headers: Record<string, string> = {}) => post('/v1/music/generations', key, body, headers);
const asset = (key: string, body: unknown, headers: Record<string, string> = {}) => post('/v1/music/assets', key, body, headers);
const poll = (key: string, id: unknown) => http.until(`/v1/music/generations/${String(id)}`, key, ended);
const list = async (key: string, query = '') => ((await (await http.get(`/v1/music/generations${query}`, key)).json()) as { data: Json[] }).data;

/** A succeeded generation of the account, and its upstream task id. */
async function song(accountId: string, key: string, body: Json = { model: 'mus-a', prompt: 'a calm sea at dawn' }) {
  const { body: submitted } = await submit(key, body);
  const done = await poll(key, submitted.id);
  expect(done.status).toBe('succeeded');
  const row = await h.t.gateway.taskQueries.get(accountId, 'music', String(submitted.id));
  return { id: String(submitted.id), done, upstreamId: row!.upstream_task_id!, channelId: row!.channel_id! };
}

describe('POST /v1/music/generations', () => {
  it('answers processing at once, reserves one call, settles one call on two songs, and shows them with their own ids', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'mus-a', prompt: 'a calm sea at dawn' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(Object.keys(body).sort()).toEqual(['created_at', 'id', 'model', 'status']);
    expect(body).toMatchObject({ status: 'processing', model: 'mus-a' });
    // The request's own fields go upstream, with the channel's model id.
    expect(submits()[0]!.body).toEqual({ model: 'mus-a-upstream', prompt: 'a calm sea at dawn' });

    const done = await poll(key, body.id);
    expect(Object.keys(done).sort()).toEqual(['created_at', 'expires_at', 'id', 'model', 'songs', 'status', 'updated_at']);
    expect(done).toMatchObject({ id: body.id, status: 'succeeded', model: 'mus-a', created_at: body.created_at });
    expect(done.updated_at as number).toBeGreaterThanOrEqual(done.created_at as number);
    expect(done.expires_at).toEqual(expect.any(Number));
    const songs = done.songs as Json[];
    expect(songs).toEqual(
      [0, 1].map((i) => ({
        id: `${body.id}-${i}`,
        audio_url: expect.stringMatching(new RegExp(`-${i}\\.mp3$`)),
        image_url: expect.stringMatching(new RegExp(`-${i}\\.png$`)),
        title: 'a calm sea at',
        duration: DEFAULT_SONG_SECONDS,
      })),
    );

    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - PRICE);
    const events = (await ledgerEvents(h, accountId)).slice(-2);
    expect(events.map((e) => e.type)).toEqual(['FundsReserved', 'HoldSettled']);
    expect(BigInt(events[0]!.data.amount as string)).toBe(PRICE);
    expect(BigInt(events[1]!.data.captured as string)).toBe(PRICE);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ model: 'mus-a', status: 'success', task_id: body.id, unit_count: 1, unit_type: 'call', cost_usd: '0.10', submitted_at: body.created_at });
    expect(row!.result_urls).toEqual(songs.map((s) => s.audio_url));
    expect(row!.result_expires_at).toBe(done.expires_at);
  });

  it('echoes title, style and instrumental as sent, passes unknown fields upstream, and keeps the songs\' durations', async () => {
    const { key } = await h.t.accountWithKey();
    const sent = { model: 'mus-a', lyrics: 'la la la [[sim:task_duration_ms:5000]]', style: 'lo-fi', title: 'Rain', instrumental: false, negative_tags: 'metal' };
    const { body } = await submit(key, sent);
    const { model: _model, ...upstream } = sent;
    expect(submits()[0]!.body).toEqual({ model: 'mus-a-upstream', ...upstream });
    const done = await poll(key, body.id);
    expect(done).toMatchObject({ status: 'succeeded', title: 'Rain', style: 'lo-fi', instrumental: false });
    expect(done).not.toHaveProperty('negative_tags');
    expect(done).not.toHaveProperty('lyrics');
    expect((done.songs as Json[]).map((s) => [s.title, s.duration])).toEqual([
      ['Rain', 2.5],
      ['Rain', 2.5],
    ]);
  });

  it('reports progress while processing, one call held meanwhile, and no progress once ended', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { body } = await submit(key, { model: 'mus-a', prompt: 'slowly [[sim:task_progress,task_polls:20]]' });
    const running = await http.until(`/v1/music/generations/${body.id}`, key, (b) => b.status === 'processing' && typeof b.progress === 'number' && (b.progress as number) > 0);
    expect(running.updated_at).toBe(running.created_at);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(PRICE);
    const done = await poll(key, body.id);
    expect(done.status).toBe('succeeded');
    expect(done).not.toHaveProperty('progress');
  });

  it.each([
    ['task_failed', 'failed'],
    ['task_expired', 'expired'],
    ['task_cancelled', 'cancelled'],
  ])('refunds in full when the upstream task ends %s', async (scenario, status) => {
    const { accountId, key } = await h.t.accountWithKey();
    const { body } = await submit(key, { model: 'mus-a', prompt: `x [[sim:${scenario}]]` });
    const done = await poll(key, body.id);
    expect(done.status).toBe(status);
    expect(done.error).toEqual({ code: expect.any(String), message: expect.any(String) });
    expect(done).not.toHaveProperty('songs');
    expect(done).not.toHaveProperty('expires_at');
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.balance).toBe(GRANT);
    expect(w.held).toBe(0n);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'error', task_id: body.id, cost_usd: '0.00', unit_type: 'call', result_urls: [] });
    const last = (await ledgerEvents(h, accountId)).at(-1)!;
    expect(last.type).toBe('HoldReleased');
    expect(BigInt(last.data.amount as string)).toBe(PRICE);
  });

  it('refuses what is not a music request with a 400 and no upstream task; every refusal is a rejected row', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const cases: Array<[unknown, RegExp]> = [
      [{ model: 'mus-a' }, /prompt or lyrics/],
      [{ model: 'mus-a', prompt: '   ', lyrics: '' }, /prompt or lyrics/],
      [{ model: 'mus-a', prompt: 'x'.repeat(5001) }, /prompt/],
      [{ model: 'mus-a', prompt: 'x', title: 't'.repeat(201) }, /title/],
      [{ model: 'mus-a', prompt: 'x', instrumental: 'yes' }, /instrumental/],
      [{ model: 'mus-a', prompt: 'x', action: 'stems' }, /POST \/v1\/music\/assets/],
      [{ prompt: 'x' }, /model/],
      [[1, 2], /body/],
    ];
    for (const [body, message] of cases) {
      const { response, body: answer } = await submit(key, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      expect(answer).toMatchObject({ error: { code: 'invalid_request', type: 'invalid_request_error' } });
      expect((answer.error as { message: string }).message).toMatch(message);
    }
    const unknown = await submit(key, { model: 'no-such-song', prompt: 'x' });
    expect(unknown.response.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: { code: 'model_not_found' } });
    for (const model of ['mus-nochannel', 'vid-x']) {
      const noChannel = await submit(key, { model, prompt: 'x' });
      expect(noChannel.response.status).toBe(503);
      expect(noChannel.body).toMatchObject({ error: { code: 'no_channel_available' } });
    }
    expect(submits()).toHaveLength(0);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT);
    const rows = await logRows(h, accountId);
    expect(rows).toHaveLength(cases.length + 3);
    expect(rows.every((r) => r.status === 'rejected' && r.cost_usd === '0.00' && r.unit_type === 'call')).toBe(true);
  });

  it('gives 402 at submit with no upstream task when one call is above the balance', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await submit(key, { model: 'mus-dear', prompt: 'x' });
    expect(response.status).toBe(402);
    expect(body).toMatchObject({ error: { code: 'quota_exceeded', type: 'insufficient_quota' } });
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(submits()).toHaveLength(0);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'rejected', error_code: 'quota_exceeded', model: 'mus-dear' });
  });

  it('fails over on a 5xx, passes an upstream 4xx through with nothing billed and no visible task', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/mus-a' }, 'http_503');
    const { response, body } = await submit(key, { model: 'mus-a', prompt: 'x' });
    expect(response.status).toBe(200);
    expect(submits().map((r) => r.path.split('/')[1])).toEqual(['mus-a', 'mus-b']);
    await poll(key, body.id);
    const [ok] = await logRows(h, accountId);
    expect(ok).toMatchObject({ attempts_count: 2, status: 'success' });

    h.sim.reset();
    h.sim.enqueueFor({ pathPrefix: '/mus-a' }, 'http_400');
    const refused = await submit(key, { model: 'mus-a', prompt: 'x' });
    expect(refused.response.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { message: expect.any(String) } });
    expect(submits()).toHaveLength(1);
    expect(await list(key)).toHaveLength(1);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(0n);
    const rows = await logRows(h, accountId);
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.status === 'error')).toMatchObject({ error_code: 'invalid_request', cost_usd: '0.00', attempts_count: 1 });
  });

  it('replays an Idempotency-Key: the same task id, one upstream task, one reservation', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'mus-a', prompt: 'once' };
    const first = await submit(key, body, { 'idempotency-key': 'music-1' });
    const again = await submit(key, body, { 'idempotency-key': 'music-1' });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(again.body).toEqual(first.body);
    expect(submits()).toHaveLength(1);
    await poll(key, first.body.id);
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(1);
    const other = await submit(key, { ...body, prompt: 'twice' }, { 'idempotency-key': 'music-1' });
    expect(other.response.status).toBe(409);
    expect(other.body).toMatchObject({ error: { code: 'idempotency_key_reuse' } });
  });
});

describe('POST /v1/music/assets', () => {
  it('makes stems of a song of an own task: the upstream gets its own ids, one call is billed, the task is polled and listed as music', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const source = await song(accountId, key);
    const from = mark();
    const { response, body } = await asset(key, { action: 'stems', song_id: `${source.id}-1` });
    expect(response.status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['action', 'created_at', 'id', 'model', 'status']);
    expect(body).toMatchObject({ status: 'processing', model: 'mus-a', action: 'stems' });
    expect(submits(from).map((r) => r.body)).toEqual([{ model: 'mus-a-upstream', action: 'stems', task_id: source.upstreamId, audio_id: `${source.upstreamId}-1` }]);

    const done = await poll(key, body.id);
    expect(done).toMatchObject({ status: 'succeeded', model: 'mus-a', action: 'stems', source_task_id: source.id, source_song_id: `${source.id}-1`, expires_at: expect.any(Number) });
    expect(done.files).toEqual([
      { name: 'vocals', url: expect.stringMatching(/-vocals\.mp3$/), format: 'mp3' },
      { name: 'instrumental', url: expect.stringMatching(/-instrumental\.mp3$/), format: 'mp3' },
    ]);
    expect(done).not.toHaveProperty('songs');
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - 2n * PRICE);
    const events = (await ledgerEvents(h, accountId)).slice(-2);
    expect(events.map((e) => [e.type, e.data.amount ?? e.data.captured])).toEqual([
      ['FundsReserved', String(PRICE)],
      ['HoldSettled', String(PRICE)],
    ]);
    const rows = await logRows(h, accountId);
    const row = rows.find((r) => r.task_id === body.id)!;
    expect(row).toMatchObject({ status: 'success', unit_count: 1, unit_type: 'call', cost_usd: '0.10', model: 'mus-a' });
    expect(row.result_urls).toEqual((done.files as Json[]).map((f) => f.url));
    // Listed with the music tasks; the follow-up carries its action.
    const listed = new Map((await list(key)).map((t) => [t.id, t]));
    expect([...listed.keys()].sort()).toEqual([body.id, source.id].sort());
    expect(listed.get(body.id)).toEqual(done);
    expect(listed.get(source.id)).not.toHaveProperty('action');
  });

  it('writes lyrics from a prompt alone (on the first music model the key may use), with nothing to expire', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { body } = await asset(key, { action: 'lyrics', prompt: 'rain on the roof' });
    expect(body).toMatchObject({ status: 'processing', model: 'mus-a', action: 'lyrics' });
    expect(submits()[0]!.body).toEqual({ model: 'mus-a-upstream', action: 'lyrics', prompt: 'rain on the roof' });
    const done = await poll(key, body.id);
    expect(done).toMatchObject({ status: 'succeeded', action: 'lyrics', lyrics: { title: 'rain on the roof', text: lyricsFor('rain on the roof', 'rain on the roof') } });
    expect(done).not.toHaveProperty('expires_at');
    expect(done).not.toHaveProperty('source_task_id');
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'success', unit_count: 1, unit_type: 'call', result_urls: [], result_expires_at: null });
  });

  it('extends a song into two new songs, covers one of those in turn, and bills the named model on the channel that made the song', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/mus-a' }, 'http_503');
    const source = await song(accountId, key);
    expect(source.channelId).toBe('mus-b');
    const from = mark();
    const { body } = await asset(key, { action: 'extend', task_id: source.id, model: 'mus-b', prompt: 'a longer calm sea', continue_at: 60 });
    expect(body.model).toBe('mus-b');
    // Follow-ups run where the song is: mus-b, though mus-a comes first for the model.
    expect(submits(from).map((r) => r.path.split('/')[1])).toEqual(['mus-b']);
    expect(submits(from)[0]!.body).toEqual({ model: 'mus-b-upstream', action: 'extend', task_id: source.upstreamId, audio_id: `${source.upstreamId}-0`, prompt: 'a longer calm sea', continue_at: 60 });
    const extended = await poll(key, body.id);
    expect(extended).toMatchObject({ status: 'succeeded', action: 'extend', source_song_id: `${source.id}-0` });
    expect((extended.songs as Json[]).map((s) => s.id)).toEqual([`${body.id}-0`, `${body.id}-1`]);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - PRICE - PRICE_B);

    const cover = await asset(key, { action: 'cover', task_id: body.id, song_index: 1, style: 'jazz' });
    const covered = await poll(key, cover.body.id);
    expect(covered).toMatchObject({ status: 'succeeded', model: 'mus-b', action: 'cover', source_task_id: body.id, source_song_id: `${body.id}-1`, style: 'jazz' });
    expect(covered.songs as Json[]).toHaveLength(2);

    for (const action of ['wav', 'video'] as const) {
      const made = await asset(key, { action, song_id: `${cover.body.id}-0` });
      const files = (await poll(key, made.body.id)).files as Json[];
      expect(files).toEqual([{ name: action === 'wav' ? 'audio' : 'video', url: expect.stringMatching(action === 'wav' ? /\.wav$/ : /\.mp4$/), format: action === 'wav' ? 'wav' : 'mp4' }]);
    }
  });

  it('refuses a follow-up on a foreign or unknown task (404) and on one that has no such song (400), with no upstream task and nothing held', async () => {
    const owner = await h.t.accountWithKey();
    const other = await h.t.accountWithKey();
    const source = await song(owner.accountId, owner.key);
    const stems = await asset(owner.key, { action: 'stems', task_id: source.id });
    await poll(owner.key, stems.body.id);
    const failed = (await submit(owner.key, { model: 'mus-a', prompt: 'x [[sim:task_failed]]' })).body;
    await poll(owner.key, failed.id);
    const slow = (await submit(owner.key, { model: 'mus-a', prompt: 'x [[sim:task_polls:100000]]' })).body;
    const from = mark();

    const notFound: unknown[] = [
      { action: 'stems', task_id: source.id },
      { action: 'extend', song_id: `${source.id}-0` },
    ];
    for (const body of notFound) {
      const { response, body: answer } = await asset(other.key, body);
      expect(response.status, JSON.stringify(body)).toBe(404);
      expect(answer).toMatchObject({ error: { code: 'not_found' } });
    }
    for (const body of [{ action: 'wav', task_id: '00000000-0000-0000-0000-000000000000' }, { action: 'wav', task_id: 'nope' }, { action: 'wav', song_id: 'nope' }]) {
      const { response } = await asset(owner.key, body);
      expect(response.status, JSON.stringify(body)).toBe(404);
    }
    const invalid: Array<[unknown, RegExp]> = [
      [{ action: 'wav', task_id: slow.id }, /has not succeeded \(status processing\)/],
      [{ action: 'wav', task_id: failed.id }, /has not succeeded \(status failed\)/],
      [{ action: 'wav', task_id: stems.body.id }, /made no songs/],
      [{ action: 'wav', task_id: source.id, song_index: 2 }, /has 2 songs/],
      [{ action: 'wav', song_id: `${source.id}-7` }, /has 2 songs/],
      [{ action: 'wav', task_id: failed.id, song_id: `${source.id}-0` }, /not one of the task/],
      [{ action: 'wav', song_id: `${source.id}-0`, song_index: 0 }, /not both/],
      [{ action: 'extend' }, /task_id/],
      [{ action: 'lyrics' }, /prompt/],
      [{ action: 'lyrics', prompt: 'x', task_id: source.id }, /no source/],
      [{ action: 'remix', task_id: source.id }, /action/],
      [{ action: 'cover', audio_url: 'https://example.com/a.mp3' }, /audio_url/],
      [{ action: 'cover', task_id: source.id, audio_id: 'cgt-sim000001-0' }, /audio_id/],
    ];
    for (const [body, message] of invalid) {
      const { response, body: answer } = await asset(owner.key, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect((answer.error as { message: string }).message).toMatch(message);
    }
    const otherChannel = await asset(owner.key, { action: 'wav', task_id: source.id, model: 'mus-other' });
    expect(otherChannel.response.status).toBe(503);
    expect(otherChannel.body).toMatchObject({ error: { code: 'no_channel_available' } });
    expect((await asset(owner.key, { action: 'wav', task_id: source.id, model: 'vid-x' })).response.status).toBe(503);
    const dear = await asset(owner.key, { action: 'wav', task_id: source.id, model: 'mus-dear' });
    expect(dear.response.status).toBe(402);
    expect(submits(from)).toHaveLength(0);

    expect((await h.t.gateway.ledger.wallet(other.accountId)).balance).toBe(GRANT);
    const rows = await logRows(h, other.accountId);
    expect(rows).toHaveLength(notFound.length);
    expect(rows.every((r) => r.status === 'rejected' && r.error_code === 'not_found')).toBe(true);
  });

  it('replays an Idempotency-Key of a follow-up: the same task, one upstream task, one reservation; a key without the model cannot have it', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const source = await song(accountId, key);
    const from = mark();
    const body = { action: 'wav', song_id: `${source.id}-0` };
    const first = await asset(key, body, { 'idempotency-key': 'asset-1' });
    const again = await asset(key, body, { 'idempotency-key': 'asset-1' });
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(submits(from)).toHaveLength(1);
    await poll(key, first.body.id);
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(2);
    // Another key of the account, not allowed the source's model (the follow-up's default).
    const limited = await h.t.admin('POST', `/accounts/${accountId}/keys`, { name: 'limited', allowed_models: ['mus-b'] });
    const refused = await asset(limited.json().key as string, body, { 'idempotency-key': 'asset-1' });
    expect(refused.response.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: 'model_not_allowed' } });
  });
});

describe('GET /v1/music/generations', () => {
  it('shows tasks to their owner only, newest first, filtered by the music statuses', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    const ok = (await submit(a.key, { model: 'mus-a', prompt: 'one' })).body;
    const bad = (await submit(a.key, { model: 'mus-a', prompt: 'two [[sim:task_failed]]' })).body;
    const slow = (await submit(a.key, { model: 'mus-a', prompt: 'three [[sim:task_polls:100000]]' })).body;
    await poll(a.key, ok.id);
    await poll(a.key, bad.id);
    await h.t.gateway.runner.catchUpToHead();

    const foreign = await http.get(`/v1/music/generations/${ok.id}`, b.key);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ error: { code: 'not_found' } });
    expect(foreign.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect((await http.get('/v1/music/generations/00000000-0000-0000-0000-000000000000', a.key)).status).toBe(404);
    // A video task is no music task.
    expect((await http.get(`/v1/videos/generations/${ok.id}`, a.key)).status).toBe(404);

    const all = await list(a.key);
    const order = all.map((t) => [t.created_at as number, t.id as string] as const);
    expect(order).toEqual([...order].sort((x, y) => y[0] - x[0] || (y[1] > x[1] ? 1 : -1)));
    expect(new Set(all.map((t) => t.id))).toEqual(new Set([ok.id, bad.id, slow.id]));
    expect((await list(a.key, '?status=succeeded')).map((t) => t.id)).toEqual([ok.id]);
    expect((await list(a.key, '?status=processing')).map((t) => t.id)).toEqual([slow.id]);
    expect(await list(a.key, '?status=failed,succeeded&limit=1')).toHaveLength(1);
    expect(await list(a.key, '?status=expired,cancelled')).toHaveLength(0);
    expect(await list(a.key, '?status=all')).toHaveLength(3);
    expect(await list(a.key, '?limit=500')).toHaveLength(3);
    for (const query of ['?status=queued', '?status=done', '?limit=0', '?limit=x']) {
      const invalid = await http.get(`/v1/music/generations${query}`, a.key);
      expect(invalid.status, query).toBe(400);
      expect(await invalid.json()).toMatchObject({ error: { code: 'invalid_request' } });
    }
    expect(await list(b.key)).toHaveLength(0);
  });
});

describe('musicDelivery', () => {
  const state = (params: Json = {}) => ({ taskId: 't1', params }) as unknown as TaskState;
  const task = (content: Json) => ({ id: 'u1', status: 'succeeded' as const, content });

  it('fails (refunded) a result without what its action makes: no songs, a song without audio, no files, no lyrics', () => {
    expect(musicDelivery(task({}), state(), 0)).toEqual({ invalid: expect.stringMatching(/without songs/) });
    expect(musicDelivery(task({ songs: [] }), state(), 0)).toEqual({ invalid: expect.stringMatching(/without songs/) });
    expect(musicDelivery(task({ songs: [{ audio_url: 'https://x/a.mp3' }, { image_url: 'https://x/b.png' }] }), state(), 0)).toEqual({ invalid: expect.stringMatching(/song 1 without an audio_url/) });
    expect(musicDelivery(task({ songs: [{ audio_url: 'https://x/a.mp3' }] }), state({ action: 'stems' }), 0)).toEqual({ invalid: expect.stringMatching(/without stems files/) });
    expect(musicDelivery(task({ files: [{ name: 'x' }] }), state({ action: 'wav' }), 0)).toEqual({ invalid: expect.stringMatching(/without a url/) });
    expect(musicDelivery(task({ lyrics: '' }), state({ action: 'lyrics' }), 0)).toEqual({ invalid: expect.stringMatching(/without lyrics/) });
  });

  it('keeps the songs with gateway ids, one call, their audio as result URLs, and the upstream ids out of sight', () => {
    const delivered = musicDelivery(task({ songs: [{ id: 'up-0', audio_url: 'https://x/a.mp3', duration: 61.5, extra: 1 }, { audio_url: 'https://x/b.mp3' }] }), state(), 1000);
    expect(delivered).toEqual({
      result: { songs: [{ id: 't1-0', audio_url: 'https://x/a.mp3', duration: 61.5 }, { id: 't1-1', audio_url: 'https://x/b.mp3' }], expires_at: 1000 + 86_400, upstream_song_ids: ['up-0', null] },
      units: 1,
      unitCount: 1,
      resultUrls: ['https://x/a.mp3', 'https://x/b.mp3'],
      resultExpiresAt: 1000 + 86_400,
    });
  });
});
