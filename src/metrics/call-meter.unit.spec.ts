import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CallRecord } from '../events/catalog';
import { Scrape } from '../../test/support/prometheus';
import { attemptResult, CallMeter } from './call-meter';
import { GatewayMetrics } from './metrics';

const record = (fields: Partial<CallRecord> = {}): CallRecord => ({
  request_id: 'req_1',
  key_id: 'key_secret_id',
  model: 'chat-model',
  endpoint: 'chat-completions',
  status: 'success',
  error_code: null,
  error_message: null,
  input_tokens: 10,
  output_tokens: 20,
  cached_tokens: 0,
  unit_count: null,
  unit_type: null,
  latency_ms: 0,
  attempts_count: 1,
  channel_id: 'a',
  task_id: null,
  submitted_at: 1_700_000_000,
  result_urls: [],
  result_expires_at: null,
  ...fields,
});

/** performance.now() at the times given, one per call, in ms. */
function clock(...times: number[]) {
  const spy = vi.spyOn(performance, 'now');
  for (const t of times) spy.mockReturnValueOnce(t);
}

const metrics = () => new GatewayMetrics({}, { catalogueId: (model) => (model === 'chat-model' ? model : undefined) });
const series = { endpoint: 'chat-completions', model: 'chat-model' };
afterEach(() => vi.restoreAllMocks());

describe('attemptResult', () => {
  it('names an attempt by how it ended', () => {
    expect(attemptResult(null)).toBe('ok');
    expect(attemptResult({ kind: 'timeout', message: '' })).toBe('timeout');
    expect(attemptResult({ kind: 'unreachable', message: '' })).toBe('unreachable');
    expect(attemptResult({ kind: 'unreadable', message: '' })).toBe('unreadable');
    expect(attemptResult({ kind: 'status', status: 429, body: '', headers: {} })).toBe('rate_limited');
    expect(attemptResult({ kind: 'status', status: 404, body: '', headers: {} })).toBe('client_error');
    expect(attemptResult({ kind: 'status', status: 503, body: '', headers: {} })).toBe('server_error');
    // The channel's own key refused (issue 33): not the caller's 4xx.
    expect(attemptResult({ kind: 'status', status: 401, body: '', headers: {} })).toBe('credentials');
    expect(attemptResult({ kind: 'status', status: 403, body: '', headers: {} })).toBe('credentials');
    const gemini = JSON.stringify({ error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' } });
    expect(attemptResult({ kind: 'status', status: 400, body: gemini, headers: {} })).toBe('credentials');
    expect(attemptResult({ kind: 'status', status: 400, body: '{}', headers: {} })).toBe('client_error');
  });
});

describe('CallMeter', () => {
  it('splits a streamed call with a failover into upstream time (both attempts, the stream to its end) and the gateway’s own', async () => {
    const m = metrics();
    // Arrived at 0; attempt 1 at 100, failed at 300; attempt 2 at 350, headers at 500, first event
    // written at 600, the stream ended at 2,350, recorded at 2,400.
    clock(100, 300, 350, 500, 600, 2_350, 2_400);
    const meter = new CallMeter(m, 0);
    meter.attempt();
    meter.answered('a', { kind: 'status', status: 502, body: '', headers: {} });
    meter.attempt();
    meter.answered('b', null);
    meter.firstByte();
    meter.firstByte(); // only the first counts (it would take the next clock value)
    meter.streamEnded();
    meter.charge(1_500_000n);
    meter.finish(record());
    const s = new Scrape(await m.render());
    expect(s.value('gateway_call_duration_seconds_sum', series)).toBeCloseTo(2.4, 9);
    expect(s.value('gateway_call_first_byte_seconds_sum', series)).toBeCloseTo(0.6, 9);
    // 200 ms on the failed attempt, 2,000 ms from the second's request to the stream's end.
    expect(s.value('gateway_call_upstream_seconds_sum', series)).toBeCloseTo(2.2, 9);
    expect(s.value('gateway_call_overhead_seconds_sum', series)).toBeCloseTo(0.2, 9);
    expect(s.value('gateway_upstream_attempts_total', { channel: 'a', result: 'server_error' })).toBe(1);
    expect(s.value('gateway_upstream_attempts_total', { channel: 'b', result: 'ok' })).toBe(1);
    expect(s.value('gateway_upstream_failovers_total', { channel: 'a', cause: 'server_error' })).toBe(1);
    expect(s.value('gateway_cost_usd_total', { model: 'chat-model' })).toBeCloseTo(0.0015, 12);
    expect(s.value('gateway_tokens_total', { model: 'chat-model', kind: 'output' })).toBe(20);
    expect(s.value('gateway_tokens_total', { model: 'chat-model', kind: 'cached' })).toBeUndefined();
  });

  it('times a whole answer to the moment it is recorded, and records a call once', async () => {
    const m = metrics();
    // Arrived at 0; attempt at 40, whole body read at 140, recorded at 150.
    clock(40, 140, 150);
    const meter = new CallMeter(m, 0);
    meter.attempt();
    meter.answered('a', null);
    meter.finish(record());
    meter.finish(record({ status: 'error', error_code: 'internal_error' }));
    const s = new Scrape(await m.render());
    expect(s.value('gateway_call_first_byte_seconds_sum', series)).toBeCloseTo(0.15, 9);
    expect(s.value('gateway_call_upstream_seconds_sum', series)).toBeCloseTo(0.1, 9);
    expect(s.value('gateway_call_overhead_seconds_sum', series)).toBeCloseTo(0.05, 9);
    expect(s.all('gateway_calls_total')).toEqual([{ name: 'gateway_calls_total', labels: { ...series, outcome: 'success', code: 'none' }, value: 1 }]);
  });

  it('gives a refused call a duration only, under its catalogue model or `unknown`, never the client’s text or key', async () => {
    const m = metrics();
    clock(25);
    new CallMeter(m, 0).finish(record({ model: 'anything a client sends', status: 'rejected', error_code: 'model_not_found', input_tokens: 0, output_tokens: 0 }));
    const s = new Scrape(await m.render());
    const unknown = { endpoint: 'chat-completions', model: 'unknown' };
    expect(s.value('gateway_calls_total', { ...unknown, outcome: 'rejected', code: 'model_not_found' })).toBe(1);
    expect(s.value('gateway_call_duration_seconds_sum', unknown)).toBeCloseTo(0.025, 9);
    expect(s.value('gateway_call_first_byte_seconds_count', unknown)).toBeUndefined();
    expect(s.value('gateway_call_upstream_seconds_count', unknown)).toBeUndefined();
    expect(s.text).not.toContain('anything a client sends');
    expect(s.text).not.toContain('key_secret_id');
  });
});

describe('CallMeter.responded (the access line)', () => {
  it('writes the line with the record when the record came first', () => {
    const meter = new CallMeter(metrics(), 0);
    meter.charge(21_000n);
    meter.finish(record());
    const lines: unknown[] = [];
    meter.responded((call) => lines.push(call), true);
    expect(lines).toEqual([{ record: record(), cost: 21_000n }]);
  });

  it('waits for the record of a response that ended first, and writes the line once', () => {
    const meter = new CallMeter(metrics(), 0);
    const lines: unknown[] = [];
    meter.responded((call) => lines.push(call), true);
    expect(lines).toEqual([]);
    meter.charge(5n);
    meter.finish(record({ output_tokens: 7 }));
    meter.finish(record({ output_tokens: 8 }));
    expect(lines).toEqual([{ record: record({ output_tokens: 7 }), cost: 5n }]);
  });

  it('writes a line without a record at once when none is awaited', () => {
    const meter = new CallMeter(metrics(), 0);
    const lines: unknown[] = [];
    meter.responded((call) => lines.push(call), false);
    expect(lines).toEqual([null]);
  });
});
