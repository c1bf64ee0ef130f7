/**
 * The asynchronous mode of the image endpoints (spec: "Image task (asynchronous mode)", POST
 * /v1/images/generations async rules 1-5, /v1/images/edits): submit, 202 polls, the final answer byte for
 * byte the synchronous one, money settled on the images returned or refunded, the list and its filters,
 * Idempotency-Key, the 280 s limit, and a task cut by a shutdown. On PGlite, or on Postgres and Redis
 * when DATABASE_URL / REDIS_URL are set.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { PNG_BASE64 } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { testDatabase } from '../support/storage';
import { GRID_PRICE, IMAGE_PRICE, imagesConfig } from './support';
import { ledgerEvents, logRows, startTaskHarness } from './task-support';

const GRANT = parseUsd('40.44');
const PRICE = parseUsd(IMAGE_PRICE);
/** Polls and syncs answer true status codes (no keep-alive within a test); a hop of 4 s, a ladder of 5 s:
 * well above the 1.5 s a slow upstream takes here, also on a loaded machine (a hop that timed out is not
 * sent to another channel, so a tighter margin would fail the call). */
const TIMINGS = { keepAliveAfterMs: 60_000, keepAliveEveryMs: 10_000, hopMs: 4_000, ladderMs: 5_000 };

type Json = Record<string, any>;

function client(h: SimulatedGateway) {
  const send = (method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${h.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const c = {
    post: (path: string, key: string, body: unknown, headers: Record<string, string> = {}) => send('POST', path, key, body, headers),
    get: (path: string, key: string) => send('GET', path, key),
    form: (path: string, key: string, form: FormData, headers: Record<string, string> = {}) =>
      fetch(`${h.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body: form }),
    /** Submits with `async: true`; the answer must be the task. */
    async submit(key: string, body: Json, path = '/v1/images/generations', headers: Record<string, string> = {}) {
      const response = await c.post(path, key, { ...body, async: true }, headers);
      const json = (await response.json()) as Json;
      expect(response.status, JSON.stringify(json)).toBe(200);
      return { response, task: json };
    },
    /** Polls a task until its final answer: every 202 body on the way, then the answer as it came. */
    async final(id: string, key: string, timeoutMs = 20_000) {
      const pending: Json[] = [];
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const response = await c.get(`/v1/images/generations/${id}`, key);
        const text = await response.text();
        if (response.status !== 202) return { status: response.status, text, headers: response.headers, pending };
        pending.push(JSON.parse(text) as Json);
        if (Date.now() > deadline) expect.fail(`task ${id} never ended; last: ${text}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async list(key: string, query = '') {
      const response = await c.get(`/v1/images/generations${query}`, key);
      return { status: response.status, body: (await response.json()) as Json };
    },
  };
  return c;
}

/** The parts of an answer that differ between two calls of the same request: the upstream's clock and request numbers. */
const normalized = (text: string) =>
  text
    .replace(/"created":\d+/g, '"created":0')
    .replace(/"expires_at":\d+/g, '"expires_at":0')
    .replace(/img-sim\d+/g, 'img-simN');

async function money(h: SimulatedGateway, accountId: string) {
  await h.t.gateway.tasks.idle();
  await h.t.gateway.ledger.idle();
  return h.t.gateway.ledger.wallet(accountId);
}

/** The task's call-log row, once every task run has ended and the views caught up. */
async function taskRows(h: SimulatedGateway, accountId: string, taskId: string) {
  await expect.poll(() => h.t.gateway.workflows.background.running(taskId), { timeout: 10_000 }).toBe(false);
  return (await logRows(h, accountId)).filter((r) => r.task_id === taskId);
}

async function itemOf(h: SimulatedGateway, key: string, id: string): Promise<Json> {
  await h.t.gateway.runner.catchUpToHead();
  const { body } = await client(h).list(key, '?limit=100');
  const item = (body.data as Json[]).find((t) => t.id === id);
  expect(item, `task ${id} in the list`).toBeDefined();
  return item!;
}

describe('async image tasks', () => {
  let h: SimulatedGateway;
  let http: ReturnType<typeof client>;
  beforeAll(async () => {
    h = await startTaskHarness(imagesConfig, { imageTimings: TIMINGS });
    http = client(h);
  });
  afterAll(() => h.close());
  beforeEach(() => h.sim.reset());

  it('answers queued at once, polls 202 while it runs, and ends with the synchronous answer byte for byte, billed per image', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const request = { model: 'img-model', prompt: 'a red cube', n: 2 };
    h.sim.enqueue('slow_first_byte:1500');
    const { response, task } = await http.submit(key, request);
    const trace = response.headers.get('x-gateway-trace');
    expect(trace).toMatch(/^req_/);
    expect(Object.keys(task).sort()).toEqual(['created_at', 'id', 'model', 'status']);
    expect(task).toMatchObject({ status: 'queued', model: 'img-model' });
    expect(String(task.id)).toMatch(/^[0-9a-f-]{36}$/);
    // The worst case is held while it runs.
    expect((await money(h, accountId)).held).toBe(2n * PRICE);

    // Running shows in the list, with nothing settled yet.
    await expect.poll(async () => (await itemOf(h, key, task.id)).status).toBe('running');
    const running = await itemOf(h, key, task.id);
    expect(running).toMatchObject({ endpoint: 'generations', unit_count: null, cost: null, completed_at: null, error_code: null, request_id: trace });
    expect(running.started_at).toEqual(expect.any(Number));
    expect(running).not.toHaveProperty('result');

    const poll = await http.get(`/v1/images/generations/${task.id}`, key);
    expect(poll.status).toBe(202);
    expect(poll.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(await poll.json()).toEqual({ id: task.id, status: 'running', model: 'img-model', created_at: task.created_at });

    const final = await http.final(task.id, key);
    expect(final.status).toBe(200);
    expect(final.pending.every((p) => Object.keys(p).length === 4 && ['queued', 'running'].includes(p.status))).toBe(true);
    // Sent upstream once, without the gateway's own switch.
    expect(h.sim.requests).toHaveLength(1);
    expect(h.sim.requests[0]!.body).toEqual({ model: 'img-model-upstream', prompt: 'a red cube', n: 2 });

    // The same request, synchronously: the same bytes but for the upstream's clock and request numbers.
    const sync = await http.post('/v1/images/generations', key, request);
    const syncText = await sync.text();
    expect(sync.status).toBe(200);
    expect(normalized(final.text)).toBe(normalized(syncText));
    expect(final.headers.get('content-type')).toBe(sync.headers.get('content-type'));
    const answer = JSON.parse(final.text) as { created: number; expires_at: number; data: Array<{ url: string }> };
    expect(answer.data).toHaveLength(2);
    expect(answer.expires_at).toBe(answer.created + 24 * 3600);
    // Polled again: the same bytes.
    expect((await http.final(task.id, key)).text).toBe(final.text);

    const w = await money(h, accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - 4n * PRICE);
    const [row] = await taskRows(h, accountId, task.id);
    const syncRow = (await logRows(h, accountId)).find((r) => r.task_id === null)!;
    expect(row).toMatchObject({
      request_id: trace,
      status: 'success',
      unit_count: 2,
      unit_type: 'image',
      cost_usd: '0.08',
      attempts_count: 1,
      submitted_at: task.created_at,
      input_tokens: syncRow.input_tokens,
      output_tokens: syncRow.output_tokens,
    });
    expect(row!.result_urls).toEqual(answer.data.map((d) => d.url));
    expect(row!.result_expires_at).toBe(answer.expires_at);
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-4)).toEqual(['FundsReserved', 'HoldSettled', 'FundsReserved', 'HoldSettled']);

    const item = await itemOf(h, key, task.id);
    expect(item).toEqual({
      id: task.id,
      status: 'succeeded',
      model: 'img-model',
      endpoint: 'generations',
      created_at: task.created_at,
      started_at: running.started_at,
      completed_at: expect.any(Number),
      unit_count: 2,
      cost: '0.08',
      error_code: null,
      request_id: trace,
      result: { urls: answer.data.map((d) => d.url), expires_at: answer.expires_at },
    });
  });

  it('settles a partial answer on the images returned (3 of 4), and a fixed-grid SKU reserves the grid', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueue('slow_first_byte:400');
    const { task } = await http.submit(key, { model: 'img-model', prompt: 'four [[sim:images_partial:3]]', n: 4 });
    expect((await money(h, accountId)).held).toBe(4n * PRICE);
    const final = await http.final(task.id, key);
    expect(final.status).toBe(200);
    expect((JSON.parse(final.text) as { data: unknown[] }).data).toHaveLength(3);
    const w = await money(h, accountId);
    expect(w).toMatchObject({ balance: GRANT - 3n * PRICE, held: 0n });
    const [row] = await taskRows(h, accountId, task.id);
    expect(row).toMatchObject({ status: 'success', unit_count: 3, cost_usd: '0.12' });
    expect(await itemOf(h, key, task.id)).toMatchObject({ unit_count: 3, cost: '0.12', result: { urls: expect.any(Array) } });

    const grid = await http.submit(key, { model: 'grid-model', prompt: 'grid', n: 1 });
    expect((await http.final(grid.task.id, key)).status).toBe(200);
    const reserved = (await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved').at(-1)!;
    expect(BigInt(reserved.data.amount as string)).toBe(4n * parseUsd(GRID_PRICE));
    expect((await money(h, accountId)).balance).toBe(GRANT - 3n * PRICE - 4n * parseUsd(GRID_PRICE));
  });

  it('reads a task at a balance of zero (polls and the list are free), while a new submit is 402', async () => {
    const { accountId, keyId, key } = await h.t.accountWithKey();
    const { task } = await http.submit(key, { model: 'img-model', prompt: 'the last one' });
    await http.final(task.id, key);
    // Everything that is left is spent elsewhere.
    const rest = (await money(h, accountId)).balance;
    const ledger = h.t.gateway.ledger;
    expect((await ledger.reserve(accountId, { holdId: `drain-${accountId}`, amount: rest, keyId, purpose: 'test drain', ttlSeconds: 60 })).ok).toBe(true);
    expect((await ledger.settle(accountId, `drain-${accountId}`, rest)).ok).toBe(true);
    expect((await money(h, accountId)).balance).toBe(0n);
    const final = await http.final(task.id, key);
    expect(final.status).toBe(200);
    expect((await http.list(key)).status).toBe(200);
    const refused = await http.post('/v1/images/generations', key, { model: 'img-model', prompt: 'one more', async: true });
    expect(refused.status).toBe(402);
  });

  it('refunds in full when the upstream returns no image', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { task } = await http.submit(key, { model: 'img-model', prompt: 'nothing [[sim:images_partial:0]]', n: 2 });
    const final = await http.final(task.id, key);
    expect(final.status).toBe(200);
    expect((JSON.parse(final.text) as { data: unknown[] }).data).toEqual([]);
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const [row] = await taskRows(h, accountId, task.id);
    expect(row).toMatchObject({ status: 'success', unit_count: 0, cost_usd: '0.00' });
    expect((await ledgerEvents(h, accountId)).map((e) => e.type).slice(-2)).toEqual(['FundsReserved', 'HoldReleased']);
    expect(await itemOf(h, key, task.id)).toMatchObject({ status: 'succeeded', unit_count: 0, cost: '0.00', result: { urls: [], expires_at: null } });
  });

  it('ends with an upstream 4xx passed through as the synchronous call does, tries no other channel and refunds', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueue('http_400');
    const { task } = await http.submit(key, { model: 'img-model', prompt: 'refused' });
    const final = await http.final(task.id, key);
    expect(h.sim.requests).toHaveLength(1);
    h.sim.enqueue('http_400');
    const sync = await http.post('/v1/images/generations', key, { model: 'img-model', prompt: 'refused' });
    expect(final.status).toBe(400);
    expect(sync.status).toBe(400);
    expect(final.text).toBe(await sync.text());
    expect(JSON.parse(final.text)).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(h.sim.requests).toHaveLength(2);

    expect(await money(h, accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const [row] = await taskRows(h, accountId, task.id);
    expect(row).toMatchObject({ status: 'error', error_code: 'invalid_request', cost_usd: '0.00', unit_count: 0, attempts_count: 1 });
    const item = await itemOf(h, key, task.id);
    expect(item).toMatchObject({ status: 'failed', error_code: 'invalid_request', cost: '0.00', unit_count: 0 });
    expect(item).not.toHaveProperty('result');
  });

  it('fails over on a 5xx and bills once; every channel 5xx ends with the 5xx passed through, refunded', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/img-a' }, 'http_503');
    const { task } = await http.submit(key, { model: 'img-model', prompt: 'failover' });
    expect((await http.final(task.id, key)).status).toBe(200);
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-img-a', 'key-img-b']);
    const [row] = await taskRows(h, accountId, task.id);
    expect(row).toMatchObject({ status: 'success', attempts_count: 2, cost_usd: '0.04' });
    expect((await money(h, accountId)).balance).toBe(GRANT - PRICE);

    h.sim.reset();
    h.sim.enqueue('http_500');
    h.sim.enqueue('http_500');
    const failed = await http.submit(key, { model: 'img-model', prompt: 'all down' });
    const final = await http.final(failed.task.id, key);
    h.sim.enqueue('http_500');
    h.sim.enqueue('http_500');
    const sync = await http.post('/v1/images/generations', key, { model: 'img-model', prompt: 'all down' });
    expect(final.status).toBe(500);
    expect(final.text).toBe(await sync.text());
    expect(h.sim.requests).toHaveLength(4);
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT - PRICE, held: 0n });
    const [down] = await taskRows(h, accountId, failed.task.id);
    expect(down).toMatchObject({ status: 'error', error_code: 'upstream_error', attempts_count: 2, cost_usd: '0.00' });
  });

  it('stops at the ladder\'s limit (the task\'s 280 s, shortened here): 504 upstream_timeout as the synchronous call, failed and refunded', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const request = { model: 'img-model', prompt: 'never [[sim:hang]]' };
    const [{ task }, sync] = await Promise.all([http.submit(key, request), http.post('/v1/images/generations', key, request)]);
    const final = await http.final(task.id, key);
    expect(final.status).toBe(504);
    expect(sync.status).toBe(504);
    expect(final.text).toBe(await sync.text());
    expect(JSON.parse(final.text)).toEqual({ error: { message: 'the upstream did not answer in time', type: 'api_error', code: 'upstream_timeout' } });
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const [row] = await taskRows(h, accountId, task.id);
    // The hop's time-out ends the ladder: the upstream may be generating it, no other channel is sent it.
    expect(row).toMatchObject({ status: 'error', error_code: 'upstream_timeout', attempts_count: 1, cost_usd: '0.00' });
    expect(await itemOf(h, key, task.id)).toMatchObject({ status: 'failed', error_code: 'upstream_timeout', cost: '0.00', unit_count: 0 });
  });

  it('runs edits asynchronously, JSON and multipart (the files live in the process until the run ends)', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const json = await http.submit(key, { model: 'img-model', prompt: 'edit it', image_urls: ['https://a.example/x.png'] }, '/v1/images/edits');
    expect((await http.final(json.task.id, key)).status).toBe(200);
    expect(h.sim.requests.at(-1)!.path).toBe('/img-a/v1/images/edits');
    expect(await itemOf(h, key, json.task.id)).toMatchObject({ endpoint: 'edits', status: 'succeeded', unit_count: 1 });

    const png = Buffer.from(PNG_BASE64, 'base64');
    const form = new FormData();
    form.append('model', 'img-model');
    form.append('prompt', 'make it blue');
    form.append('n', '2');
    form.append('async', 'true');
    form.append('image[]', new Blob([png], { type: 'image/png' }), 'a.png');
    form.append('image[]', new Blob([png], { type: 'image/png' }), 'b.png');
    h.sim.enqueue('slow_first_byte:300');
    const submitted = await http.form('/v1/images/edits', key, form);
    expect(submitted.status).toBe(200);
    expect(submitted.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const task = (await submitted.json()) as Json;
    expect(task).toMatchObject({ status: 'queued', model: 'img-model' });
    const final = await http.final(task.id, key);
    expect(final.status).toBe(200);
    expect((JSON.parse(final.text) as { data: unknown[] }).data).toHaveLength(2);
    const sent = h.sim.requests.at(-1)!.body as { files: Array<{ filename: string; size: number }> } & Json;
    expect(sent.files.map((f) => f.filename)).toEqual(['a.png', 'b.png']);
    expect(sent.files.every((f) => f.size === png.length)).toBe(true);
    expect(sent).not.toHaveProperty('async');
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT - 3n * PRICE, held: 0n });
    const [row] = await taskRows(h, accountId, task.id as string);
    expect(row).toMatchObject({ status: 'success', unit_count: 2, cost_usd: '0.08' });
  });

  it('refuses at submit what the synchronous mode refuses, with no task and no upstream call, each a rejected row', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const refusals: Array<[string, Json, number, string]> = [
      ['/v1/images/generations', { model: 'img-model', prompt: 'x', n: 11 }, 400, 'invalid_request'],
      ['/v1/images/generations', { model: 'img-model' }, 400, 'invalid_request'],
      ['/v1/images/generations', { model: 'nope', prompt: 'x' }, 400, 'model_not_found'],
      ['/v1/images/generations', { model: 'chat-model', prompt: 'x' }, 503, 'no_channel_available'],
      ['/v1/images/edits', { model: 'img-model', prompt: 'no reference' }, 400, 'invalid_request'],
    ];
    for (const [path, body, status, code] of refusals) {
      const response = await http.post(path, key, { ...body, async: true });
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      expect(((await response.json()) as Json).error).toMatchObject({ code });
    }
    const notAsync = await http.post('/v1/images/generations', key, { model: 'img-model', prompt: 'x', async: 'yes' });
    expect(notAsync.status).toBe(400);
    // Room for 3 images of the grid SKU, which always reserves 4.
    const capped = await h.t.accountWithKey({ spend_cap_usd: '0.075' });
    const quota = await http.post('/v1/images/generations', capped.key, { model: 'grid-model', prompt: 'x', async: true });
    expect(quota.status).toBe(402);
    expect(((await quota.json()) as Json).error).toMatchObject({ code: 'quota_exceeded', type: 'insufficient_quota' });
    expect(quota.headers.get('x-gateway-trace')).toMatch(/^req_/);

    expect(h.sim.requests).toHaveLength(0);
    expect((await http.list(key)).body).toEqual({ data: [], next_cursor: null });
    expect((await http.list(capped.key)).body.data).toEqual([]);
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT, held: 0n });
    const rows = await logRows(h, accountId);
    expect(rows).toHaveLength(refusals.length + 1);
    expect(rows.every((r) => r.status === 'rejected' && r.cost_usd === '0.00' && r.task_id === null && r.unit_type === 'image')).toBe(true);
    expect(await logRows(h, capped.accountId)).toMatchObject([{ status: 'rejected', error_code: 'quota_exceeded' }]);
  });

  it('replays an Idempotency-Key: the same task id, one run, one reservation (JSON and multipart)', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'img-model', prompt: 'once', n: 2, async: true };
    h.sim.enqueue('slow_first_byte:300');
    const first = await http.post('/v1/images/generations', key, body, { 'idempotency-key': 'img-async-1' });
    const firstText = await first.text();
    const again = await http.post('/v1/images/generations', key, { async: true, n: 2, prompt: 'once', model: 'img-model' }, { 'idempotency-key': 'img-async-1' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
    const task = JSON.parse(firstText) as Json;
    expect((await http.final(task.id, key)).status).toBe(200);
    const other = await http.post('/v1/images/generations', key, { ...body, n: 3 }, { 'idempotency-key': 'img-async-1' });
    expect(other.status).toBe(409);
    expect(((await other.json()) as Json).error).toMatchObject({ code: 'idempotency_key_reuse' });

    const png = Buffer.from(PNG_BASE64, 'base64');
    const form = () => {
      const f = new FormData();
      f.append('model', 'img-model');
      f.append('prompt', 'once, edited');
      f.append('async', 'true');
      f.append('image', new Blob([png], { type: 'image/png' }), 'a.png');
      return f;
    };
    const editFirst = await http.form('/v1/images/edits', key, form(), { 'idempotency-key': 'img-async-2' });
    const editText = await editFirst.text();
    expect(editFirst.status).toBe(200);
    const editAgain = await http.form('/v1/images/edits', key, form(), { 'idempotency-key': 'img-async-2' });
    expect(editAgain.headers.get('idempotency-replayed')).toBe('true');
    expect(await editAgain.text()).toBe(editText);
    const edit = JSON.parse(editText) as Json;
    expect((await http.final(edit.id, key)).status).toBe(200);

    expect(h.sim.requests).toHaveLength(2);
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(2);
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT - 3n * PRICE, held: 0n });
    expect((await http.list(key)).body.data).toHaveLength(2);
    // One row per task; the refused reuse of the key is a rejected row of its own.
    const rows = await logRows(h, accountId);
    expect(rows.filter((r) => r.task_id !== null).map((r) => r.task_id).sort()).toEqual([task.id, edit.id].sort());
    expect(rows.filter((r) => r.task_id === null)).toMatchObject([{ status: 'rejected', error_code: 'idempotency_key_reuse' }]);
  });

  it('lists the owner\'s tasks newest first: status filters and groups, limit bounds, cursor paging to the end; others see nothing', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    const done: string[] = [];
    for (const prompt of ['one', 'two', 'three']) {
      const { task } = await http.submit(a.key, { model: 'img-model', prompt });
      await http.final(task.id, a.key);
      done.push(task.id);
    }
    h.sim.enqueue('http_400');
    const { task: bad } = await http.submit(a.key, { model: 'img-model', prompt: 'bad' });
    await http.final(bad.id, a.key);
    h.sim.enqueue('slow_first_byte:1500');
    const { task: flying } = await http.submit(a.key, { model: 'img-model', prompt: 'slow' });
    await h.t.gateway.runner.catchUpToHead();

    const ids = (body: Json) => (body.data as Json[]).map((t) => t.id as string);
    const all = (await http.list(a.key)).body;
    expect(all.next_cursor).toBeNull();
    expect(new Set(ids(all))).toEqual(new Set([...done, bad.id, flying.id]));
    const order = (all.data as Json[]).map((t) => [t.created_at as number, t.id as string] as const);
    expect(order).toEqual([...order].sort((x, y) => y[0] - x[0] || (y[1] > x[1] ? 1 : -1)));
    expect(new Set(ids((await http.list(a.key, '?status=succeeded')).body))).toEqual(new Set(done));
    expect(ids((await http.list(a.key, '?status=failed')).body)).toEqual([bad.id]);
    expect(ids((await http.list(a.key, '?status=in_flight')).body)).toEqual([flying.id]);
    expect(ids((await http.list(a.key, '?status=queued,running')).body)).toEqual([flying.id]);
    expect(new Set(ids((await http.list(a.key, '?status=failed,in_flight')).body))).toEqual(new Set([bad.id, flying.id]));
    expect(ids((await http.list(a.key, '?status=all')).body)).toEqual(ids(all));

    // Paging one by one reaches the end with the same tasks in the same order.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page: Json = (await http.list(a.key, query)).body;
      expect((page.data as unknown[]).length).toBeLessThanOrEqual(2);
      paged.push(...ids(page));
      cursor = page.next_cursor as string | null;
    } while (cursor !== null);
    expect(paged).toEqual(ids(all));
    const succeededPage = (await http.list(a.key, '?status=succeeded&limit=2')).body;
    expect(succeededPage.next_cursor).toEqual(expect.any(String));
    const rest = (await http.list(a.key, `?status=succeeded&limit=2&cursor=${encodeURIComponent(succeededPage.next_cursor as string)}`)).body;
    expect([...ids(succeededPage), ...ids(rest)]).toHaveLength(3);
    expect(rest.next_cursor).toBeNull();

    expect(ids((await http.list(a.key, '?limit=1')).body)).toEqual(ids(all).slice(0, 1));
    expect(ids((await http.list(a.key, '?limit=100')).body)).toEqual(ids(all));
    for (const query of ['?limit=0', '?limit=101', '?limit=abc', '?limit=-1', '?status=done', '?status=expired', '?cursor=not-a-cursor', '?from=yesterday', '?to=2026-13-45'])
      expect((await http.list(a.key, query)).body, query).toMatchObject({ error: { code: 'invalid_request', type: 'invalid_request_error' } });
    expect((await http.get('/v1/images/generations?limit=0', a.key)).status).toBe(400);
    const createdAt = (all.data as Json[]).map((t) => t.created_at as number);
    expect(ids((await http.list(a.key, `?from=${Math.max(...createdAt) + 1}`)).body)).toEqual([]);
    expect(ids((await http.list(a.key, `?to=${Math.min(...createdAt)}`)).body)).toEqual([]);

    expect((await http.list(b.key)).body).toEqual({ data: [], next_cursor: null });
    const foreign = await http.get(`/v1/images/generations/${done[0]}`, b.key);
    expect(foreign.status).toBe(404);
    expect(foreign.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(await foreign.json()).toMatchObject({ error: { code: 'not_found', type: 'invalid_request_error' } });
    expect((await http.get('/v1/images/generations/00000000-0000-0000-0000-000000000000', a.key)).status).toBe(404);
    await http.final(flying.id, a.key);
  });
});

describe('async image tasks on a clock of the test', () => {
  let h: SimulatedGateway;
  let http: ReturnType<typeof client>;
  let clock = Math.floor(Date.parse('2026-10-15T12:00:00Z') / 1000);
  beforeAll(async () => {
    h = await startTaskHarness(imagesConfig, { imageTimings: TIMINGS, now: () => clock });
    http = client(h);
  });
  afterAll(() => h.close());
  beforeEach(() => h.sim.reset());

  it('filters by submit time: from and to as Unix seconds, RFC 3339 and YYYY-MM-DD, `to` excluding its day', async () => {
    const { key } = await h.t.accountWithKey();
    const at = async (iso: string) => {
      clock = Math.floor(Date.parse(iso) / 1000);
      const { task } = await http.submit(key, { model: 'img-model', prompt: iso });
      await http.final(task.id, key);
      return task.id as string;
    };
    const t1 = await at('2026-10-15T23:59:59Z');
    const t2 = await at('2026-10-16T00:00:00Z');
    const t3 = await at('2026-10-16T12:00:00Z');
    const t4 = await at('2026-10-17T00:00:00Z');
    const ids = async (query: string) => {
      const { status, body } = await http.list(key, query);
      expect(status, query).toBe(200);
      return (body.data as Json[]).map((t) => t.id);
    };
    const unix = (iso: string) => Math.floor(Date.parse(iso) / 1000);
    expect(await ids('')).toEqual([t4, t3, t2, t1]);
    expect(await ids('?to=2026-10-16')).toEqual([t1]);
    expect(await ids('?from=2026-10-16&to=2026-10-17')).toEqual([t3, t2]);
    expect(await ids('?from=2026-10-16')).toEqual([t4, t3, t2]);
    expect(await ids('?from=2026-10-16T12:00:00Z')).toEqual([t4, t3]);
    expect(await ids(`?from=${encodeURIComponent('2026-10-16T14:00:00+02:00')}&to=${encodeURIComponent('2026-10-17T00:00:00Z')}`)).toEqual([t3]);
    expect(await ids('?to=2026-10-16T00:00:00Z')).toEqual([t1]);
    expect(await ids(`?from=${unix('2026-10-16T00:00:00Z')}&to=${unix('2026-10-17T00:00:00Z')}`)).toEqual([t3, t2]);
    expect(await ids(`?to=${unix('2026-10-16T00:00:01Z')}`)).toEqual([t2, t1]);
    expect(await ids(`?from=${unix('2026-10-17T00:00:00Z')}&status=succeeded`)).toEqual([t4]);
  });

  it('a task past its 280 s that the sweep finds is failed and refunded: 504 upstream_timeout, error_code task_expired', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { task } = await http.submit(key, { model: 'img-model', prompt: 'stuck [[sim:hang]]' });
    await expect.poll(async () => (await http.get(`/v1/images/generations/${task.id}`, key)).status).toBe(202);
    expect((await money(h, accountId)).held).toBe(PRICE);
    clock += 280;
    const final = await http.final(task.id, key);
    expect(final.status).toBe(504);
    const body = JSON.parse(final.text) as Json;
    expect(body).toEqual({ error: { message: expect.stringMatching(/280 s/), type: 'api_error', code: 'upstream_timeout' } });
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT, held: 0n });
    // Its run still ends (its ladder's own limit) and changes nothing: one row, refunded.
    const rows = await taskRows(h, accountId, task.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'error', error_code: 'task_expired', cost_usd: '0.00' });
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT, held: 0n });
    expect(await itemOf(h, key, task.id)).toMatchObject({ status: 'failed', error_code: 'task_expired', cost: '0.00', unit_count: 0 });
    expect((await http.final(task.id, key)).text).toBe(final.text);
  });

  it('keeps a b64_json answer in the object store for 24 hours (same bytes as the synchronous call), then 410 result_expired', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const request = { model: 'img-model', prompt: 'inline bytes', n: 2, response_format: 'b64_json' };
    const { task } = await http.submit(key, request);
    const final = await http.final(task.id, key);
    expect(final.status).toBe(200);
    const sync = await http.post('/v1/images/generations', key, request);
    expect(normalized(final.text)).toBe(normalized(await sync.text()));
    expect((JSON.parse(final.text) as { data: Array<{ b64_json: string }> }).data.map((d) => d.b64_json)).toEqual([PNG_BASE64, PNG_BASE64]);
    // Not in the log: a key, a size and a digest.
    const row = await h.t.gateway.taskQueries.get(accountId, 'image', task.id);
    expect(row!.result).toEqual({ status: 200, content_type: 'application/json', key: `media/${accountId}/${task.id}/answer.json`, size: Buffer.byteLength(final.text), sha256: expect.stringMatching(/^[0-9a-f]{64}$/), expires_at: clock + 86_400 });
    const events = await h.t.gateway.storage.store.readStream(`task-${task.id}`);
    expect(JSON.stringify(events, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(PNG_BASE64);
    expect(await money(h, accountId)).toMatchObject({ balance: GRANT - 4n * PRICE, held: 0n });
    expect(await itemOf(h, key, task.id)).toMatchObject({ status: 'succeeded', unit_count: 2, cost: '0.08', result: { urls: [], expires_at: null } });

    // A link answer is kept in the log and stays (its links expire, as the body says).
    const { task: linked } = await http.submit(key, { model: 'img-model', prompt: 'links' });
    const linkedFinal = await http.final(linked.id, key);

    clock += 86_400;
    const gone = await http.final(task.id, key);
    expect(gone.status).toBe(410);
    expect(JSON.parse(gone.text)).toMatchObject({ error: { code: 'result_expired', type: 'invalid_request_error' } });
    expect(await itemOf(h, key, task.id)).toMatchObject({ status: 'succeeded', cost: '0.08' });
    expect(await h.t.gateway.hosted.sweep(clock + 1)).toBeGreaterThanOrEqual(1);
    expect((await http.final(task.id, key)).status).toBe(410);
    const stillThere = await http.final(linked.id, key);
    expect(stillThere.status).toBe(200);
    expect(stillThere.text).toBe(linkedFinal.text);
  });
});

describe('an async image task cut by the shutdown', () => {
  it('is failed and refunded, and a gateway restarted on the same database shows it failed (503 gateway_interrupted)', async () => {
    const db = await testDatabase();
    try {
      const first = await startTaskHarness(imagesConfig, { db, shutdownGraceS: 0.2, imageTimings: { ...TIMINGS, hopMs: 30_000, ladderMs: 30_000 } });
      const { accountId, key } = await first.t.accountWithKey();
      first.sim.enqueue('slow_first_byte:10000');
      const { task } = await client(first).submit(key, { model: 'img-model', prompt: 'slow' });
      await expect.poll(async () => ((await client(first).get(`/v1/images/generations/${task.id}`, key)).json() as Promise<Json>).then((b) => b.status)).toBe('running');
      expect((await first.t.gateway.ledger.wallet(accountId)).held).toBe(PRICE);
      const started = Date.now();
      await first.close();
      // The grace, not the upstream's 10 s.
      expect(Date.now() - started).toBeLessThan(8_000);

      const second = await startTaskHarness(imagesConfig, { db, imageTimings: TIMINGS });
      try {
        const http = client(second);
        const final = await http.final(task.id, key);
        expect(final.status).toBe(503);
        expect(JSON.parse(final.text)).toEqual({ error: { message: expect.stringMatching(/shut down/), type: 'server_error', code: 'gateway_interrupted' } });
        expect(await money(second, accountId)).toMatchObject({ balance: GRANT, held: 0n });
        expect(await itemOf(second, key, task.id)).toMatchObject({ status: 'failed', error_code: 'gateway_interrupted', cost: '0.00', unit_count: 0 });
        const rows = await logRows(second, accountId);
        expect(rows).toHaveLength(1);
        expect(rows[0]).toMatchObject({ task_id: task.id, status: 'error', error_code: 'gateway_interrupted', cost_usd: '0.00' });
      } finally {
        await second.close();
      }
    } finally {
      await db.drop();
    }
  });
});
