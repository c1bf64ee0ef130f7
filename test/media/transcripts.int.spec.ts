import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAMILIES } from '../../src/commands/task/families';
import type { TaskState } from '../../src/commands/task/decider';
import type { GatewayConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { failureAnswer } from '../../src/http/media/speech/transcripts';
import { transcriptDelivery } from '../../src/tasks/families/transcript';
import { transcriptOf, type Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { api, ledgerEvents, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

const PRICE = parseUsd('0.02');
const GRANT = parseUsd('40.44');
/** The request's wait, shortened from the spec's 55 s so that the time-out is quick to see. */
const WAIT_MS = 1_500;

function config(sim: Simulator): GatewayConfig {
  const served = ['tr-a', 'tr-dear'];
  return {
    models: [
      mediaModel({ id: 'tr-a', kind: 'transcript', price: { per_call: '0.02' } }),
      mediaModel({ id: 'tr-dear', kind: 'transcript', price: { per_call: '41.00' } }),
      mediaModel({ id: 'tr-nochannel', kind: 'transcript', price: { per_call: '0.02' } }),
      mediaModel({ id: 'mus-x', kind: 'music', price: { per_call: '0.10' } }),
    ],
    channels: [mediaChannel(sim, 'tr-a', 'transcripts', served, 0), mediaChannel(sim, 'tr-b', 'transcripts', served, 1), mediaChannel(sim, 'mus', 'music', ['mus-x'], 0)],
  };
}

let h: SimulatedGateway;
let http: ReturnType<typeof api>;
beforeAll(async () => {
  h = await startTaskHarness(config, { transcriptTimings: { waitMs: WAIT_MS, pollEveryMs: 20 } });
  http = api(h);
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

type Json = Record<string, unknown>;
const TASKS = '/api/v3/contents/generations/tasks';
const submits = () => h.sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith(TASKS));
const cancels = () => h.sim.requests.filter((r) => r.method === 'DELETE');
const URL_ = 'https://media.example.com/calls/team-meeting_2024.mp3?sig=abc';

async function extract(key: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await http.post('/v1/transcripts/extract', key, body, headers);
  return { response, body: (await response.json()) as Json };
}

async function eventually(check: () => boolean, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) expect.fail('never happened');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('POST /v1/transcripts/extract', () => {
  it('waits for the upstream task in the request and answers the transcript; one call reserved and settled; no poll job follows it', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await extract(key, { model: 'tr-a', url: URL_ });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const expected = transcriptOf(URL_);
    expect(body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), model: 'tr-a', text: expected.text, language: 'en', segments: expected.segments });
    expect(submits()[0]!.body).toEqual({ model: 'tr-a-upstream', url: URL_ });
    // Polled by the request itself: the simulator's task ends on its third GET, and nothing polls after the answer.
    const polls = () => h.sim.requests.filter((r) => r.method === 'GET').length;
    expect(polls()).toBe(3);

    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(GRANT - PRICE);
    const events = (await ledgerEvents(h, accountId)).slice(-2);
    expect(events.map((e) => e.type)).toEqual(['FundsReserved', 'HoldSettled']);
    expect(BigInt(events[0]!.data.amount as string)).toBe(PRICE);
    expect(BigInt(events[1]!.data.captured as string)).toBe(PRICE);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ model: 'tr-a', status: 'success', task_id: body.id, unit_count: 1, unit_type: 'call', cost_usd: '0.02', result_urls: [], result_expires_at: null });
    await new Promise((r) => setTimeout(r, 200));
    expect(polls()).toBe(3);
  });

  it('passes language and unknown fields upstream, and answers the language the upstream gives', async () => {
    const { key } = await h.t.accountWithKey();
    const { body } = await extract(key, { model: 'tr-a', url: 'https://e.com/x/bonjour.wav', language: 'fr', diarize: true });
    expect(submits()[0]!.body).toEqual({ model: 'tr-a-upstream', url: 'https://e.com/x/bonjour.wav', language: 'fr', diarize: true });
    expect(body).toMatchObject({ language: 'fr', text: transcriptOf('https://e.com/x/bonjour.wav', 'fr').text });
  });

  it.each([
    ['task_failed', 500, 'upstream_error', 'api_error'],
    ['task_cancelled', 500, 'upstream_error', 'api_error'],
    ['task_expired', 504, 'upstream_timeout', 'api_error'],
  ])('answers an upstream task that ended %s with %i, refunded in full', async (scenario, status, code, type) => {
    const { accountId, key } = await h.t.accountWithKey();
    const { response, body } = await extract(key, { model: 'tr-a', url: URL_, note: `[[sim:${scenario}]]` });
    expect(response.status).toBe(status);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(body).toEqual({ error: { message: expect.any(String), type, code } });
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.balance).toBe(GRANT);
    expect(w.held).toBe(0n);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'error', task_id: expect.any(String), cost_usd: '0.00', unit_type: 'call' });
    const last = (await ledgerEvents(h, accountId)).at(-1)!;
    expect(last.type).toBe('HoldReleased');
    expect(BigInt(last.data.amount as string)).toBe(PRICE);
  });

  it('gives up after the wait: 504 upstream_timeout, refunded, the upstream task cancelled', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const started = Date.now();
    const { response, body } = await extract(key, { model: 'tr-a', url: `${URL_}&[[sim:task_polls:100000]]` });
    const took = Date.now() - started;
    expect(response.status).toBe(504);
    expect(body).toMatchObject({ error: { code: 'upstream_timeout', type: 'api_error', message: expect.stringMatching(/not ready within/) } });
    expect(took).toBeGreaterThanOrEqual(WAIT_MS - 50);
    expect(took).toBeLessThan(WAIT_MS + 2_000);
    const w = await h.t.gateway.ledger.wallet(accountId);
    expect(w.balance).toBe(GRANT);
    expect(w.held).toBe(0n);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'error', error_code: 'upstream_timeout', cost_usd: '0.00' });
    const task = await h.t.gateway.tasks.state(String(row!.task_id));
    expect(task).toMatchObject({ phase: 'expired', family: 'transcript' });
    await eventually(() => cancels().length === 1);
    expect(cancels()[0]!.path).toBe(`/tr-a${TASKS}/${task.upstream!.taskId}`);
  });

  it('a client that leaves before its transcript is ready is not billed for it', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const controller = new AbortController();
    const pending = fetch(`${h.baseUrl}/v1/transcripts/extract`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tr-a', url: `${URL_}&[[sim:task_polls:100000]]` }),
      signal: controller.signal,
    }).catch(() => null);
    await eventually(() => h.sim.requests.some((r) => r.method === 'GET'));
    controller.abort();
    await pending;
    await eventually(() => cancels().length === 1);
    await eventually(() => h.t.gateway.workflows.background.size === 0);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'error', error_code: 'client_disconnected', cost_usd: '0.00' });
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT);
  });

  it('refuses what is not a transcript request before any hold: 400, 402, 503, with no upstream task and a rejected row each', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const invalid: Array<[unknown, RegExp]> = [
      [{ model: 'tr-a' }, /url/],
      [{ model: 'tr-a', url: '' }, /url/],
      [{ model: 'tr-a', url: 'ftp://e.com/a.mp3' }, /http\(s\)/],
      [{ model: 'tr-a', url: 'data:audio/mp3;base64,AAAA' }, /http\(s\)/],
      [{ model: 'tr-a', url: 'https://' }, /http\(s\)/],
      [{ model: 'tr-a', url: 'https://e.com/a.mp3', language: '' }, /language/],
      [{ url: URL_ }, /model/],
    ];
    for (const [body, message] of invalid) {
      const { response, body: answer } = await extract(key, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      expect(answer).toMatchObject({ error: { code: 'invalid_request' } });
      expect((answer.error as { message: string }).message).toMatch(message);
    }
    expect((await extract(key, { model: 'nope', url: URL_ })).body).toMatchObject({ error: { code: 'model_not_found' } });
    for (const model of ['tr-nochannel', 'mus-x']) {
      const { response, body } = await extract(key, { model, url: URL_ });
      expect(response.status).toBe(503);
      expect(body).toMatchObject({ error: { code: 'no_channel_available' } });
    }
    const dear = await extract(key, { model: 'tr-dear', url: URL_ });
    expect(dear.response.status).toBe(402);
    expect(dear.body).toMatchObject({ error: { code: 'quota_exceeded', type: 'insufficient_quota' } });
    expect(submits()).toHaveLength(0);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT);
    const rows = await logRows(h, accountId);
    expect(rows).toHaveLength(invalid.length + 4);
    expect(rows.every((r) => r.status === 'rejected' && r.cost_usd === '0.00' && r.unit_type === 'call')).toBe(true);
  });

  it('fails over on a 5xx at submit, passes an upstream 4xx through with nothing billed', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueueFor({ pathPrefix: '/tr-a' }, 'http_502');
    const { response } = await extract(key, { model: 'tr-a', url: URL_ });
    expect(response.status).toBe(200);
    expect(submits().map((r) => r.path.split('/')[1])).toEqual(['tr-a', 'tr-b']);
    const [ok] = await logRows(h, accountId);
    expect(ok).toMatchObject({ status: 'success', attempts_count: 2 });

    h.sim.reset();
    h.sim.enqueueFor({ pathPrefix: '/tr-a' }, 'http_422');
    const refused = await extract(key, { model: 'tr-a', url: URL_ });
    expect(refused.response.status).toBe(422);
    expect(refused.body).toMatchObject({ error: { message: expect.any(String) } });
    expect(submits()).toHaveLength(1);
    const rows = await logRows(h, accountId);
    expect(rows.find((r) => r.status === 'error')).toMatchObject({ cost_usd: '0.00', attempts_count: 1 });
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - PRICE);
  });

  it('replays an Idempotency-Key: the same transcript, one upstream task, one reservation', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'tr-a', url: URL_ };
    const first = await extract(key, body, { 'idempotency-key': 'transcript-1' });
    const again = await extract(key, body, { 'idempotency-key': 'transcript-1' });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(submits()).toHaveLength(1);
    expect((await ledgerEvents(h, accountId)).filter((e) => e.type === 'FundsReserved')).toHaveLength(1);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - PRICE);
    // A failure does not occupy the key: the same key runs again.
    const failed = await extract(key, { ...body, note: '[[sim:task_failed]]' }, { 'idempotency-key': 'transcript-2' });
    expect(failed.response.status).toBe(500);
    const retried = await extract(key, { ...body, note: '[[sim:task_failed]]' }, { 'idempotency-key': 'transcript-2' });
    expect(retried.response.headers.get('idempotency-replayed')).toBeNull();
  });
});

describe('transcript tasks', () => {
  it('are runs of the gateway: no restart or other instance follows one', () => {
    expect(FAMILIES.transcript.runs).toBe('gateway');
  });

  it('fail towards the client with a fitting status: the upstream refusing its input 400, other failures 500, time-outs 504', () => {
    const answer = (phase: TaskState['phase'], code: string, clientGone = false) => {
      const { status, body } = failureAnswer({ phase, error: { code, message: 'm' } }, clientGone);
      return [status, (body as { error: { code: string } }).error.code];
    };
    expect(answer('failed', 'InvalidParameter.AudioUnreadable')).toEqual([400, 'invalid_request']);
    expect(answer('failed', 'InternalServiceError')).toEqual([500, 'upstream_error']);
    expect(answer('failed', 'upstream_result_invalid')).toEqual([500, 'upstream_error']);
    expect(answer('cancelled', 'Cancelled')).toEqual([500, 'upstream_error']);
    expect(answer('expired', 'TaskExpired')).toEqual([504, 'upstream_timeout']);
    expect(answer('expired', 'upstream_timeout')).toEqual([504, 'upstream_timeout']);
    expect(answer('failed', 'gateway_interrupted')).toEqual([503, 'gateway_shutting_down']);
    expect(answer('failed', 'internal_error')).toEqual([500, 'internal_error']);
    expect(answer('cancelled', 'client_disconnected', true)[0]).toBe(499);
  });

  it('deliver a text (empty for silence) billed as one call; none is invalid', () => {
    const task = (content: Json) => ({ id: 'u', status: 'succeeded' as const, content });
    const state = {} as TaskState;
    expect(transcriptDelivery(task({ text: '', segments: [{ start: 0, end: 1, text: '' }, 'x'] }), state, 0)).toEqual({
      result: { text: '', segments: [{ start: 0, end: 1, text: '' }] },
      units: 1,
      unitCount: 1,
      resultUrls: [],
      resultExpiresAt: null,
    });
    expect(transcriptDelivery(task({ language: 'en' }), state, 0)).toEqual({ invalid: expect.stringMatching(/without a transcript text/) });
  });
});
