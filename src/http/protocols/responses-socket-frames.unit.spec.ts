import { describe, expect, it } from 'vitest';
import { clientFrame, errorEvent, eventType, isTerminal, warmupEvents } from './responses-socket-frames';
import { loopbackHeaders } from './responses-socket';
import { responsesSocketSettingsOf } from './responses-socket-settings';

describe('the Responses WebSocket frames', () => {
  it('reads response.create as the Responses body, streamed, without the socket fields', () => {
    const frame = clientFrame(JSON.stringify({ type: 'response.create', model: 'm', input: 'hi', stream: false, store: false, generate: true }));
    expect(frame).toEqual({ kind: 'create', body: { model: 'm', input: 'hi', stream: true, store: false } });
    // The Realtime-style nested `response` object is taken too.
    expect(clientFrame(JSON.stringify({ type: 'response.create', response: { model: 'm', input: 'x' } }))).toEqual({ kind: 'create', body: { model: 'm', input: 'x', stream: true } });
  });

  it('tells a warm-up, an acknowledgement and a message it cannot serve apart', () => {
    expect(clientFrame(JSON.stringify({ type: 'response.create', model: 'm', generate: false })).kind).toBe('warmup');
    expect(clientFrame(JSON.stringify({ type: 'response.processed', response_id: 'resp_1' }))).toEqual({ kind: 'ignored' });
    expect(clientFrame('[1]')).toMatchObject({ kind: 'invalid' });
    expect(clientFrame('{"type":"session.update"}')).toMatchObject({ kind: 'invalid', message: expect.stringContaining('session.update') });
  });

  it('turns the HTTP route\'s refusal into the error event Codex reads, with the headers it acts on', () => {
    const body = { error: { message: 'slow down', type: 'rate_limit_error', code: 'rate_limit_exceeded' } };
    expect(errorEvent(429, body, { 'retry-after': '3', 'set-cookie': ['x'], 'x-request-id': 'req_1' })).toEqual({
      type: 'error',
      status: 429,
      error: { type: 'rate_limit_error', code: 'rate_limit_exceeded', message: 'slow down', param: null },
      headers: { 'retry-after': '3', 'x-request-id': 'req_1' },
    });
    expect(errorEvent(502, null)).toMatchObject({ status: 502, error: { type: 'server_error', code: null, message: expect.stringContaining('502') } });
  });

  it('ends each response on its terminal event only', () => {
    expect(['response.completed', 'response.failed', 'response.incomplete', 'error'].every(isTerminal)).toBe(true);
    expect(isTerminal('response.output_text.done')).toBe(false);
    expect(isTerminal(undefined)).toBe(false);
    expect(eventType(undefined, '{"type":"response.completed"}')).toBe('response.completed');
    expect(eventType('response.created', '{}')).toBe('response.created');
  });

  it('answers a warm-up with an empty completed response', () => {
    const [created, completed] = warmupEvents({ model: 'm' }, 'resp_w', 7);
    expect(created).toMatchObject({ type: 'response.created', response: { id: 'resp_w', status: 'in_progress', output: [] } });
    expect(completed).toMatchObject({ type: 'response.completed', response: { id: 'resp_w', status: 'completed', usage: { input_tokens: 0, output_tokens: 0 } } });
  });
});

describe('the Responses WebSocket upgrade', () => {
  it('passes the key and session headers on, not the socket\'s, the WebSocket beta or a proxy\'s', () => {
    const headers = loopbackHeaders({
      host: 'gw',
      authorization: 'Bearer sk-1',
      session_id: 's1',
      'openai-beta': 'responses_websockets=2026-02-06, other=1',
      'sec-websocket-key': 'k',
      'x-forwarded-for': '1.2.3.4',
      upgrade: 'websocket',
    });
    expect(headers).toEqual({ authorization: 'Bearer sk-1', session_id: 's1', 'openai-beta': 'other=1', 'content-type': 'application/json', accept: 'text/event-stream' });
    expect(loopbackHeaders({ 'openai-beta': 'responses_websockets=2026-02-06' })['openai-beta']).toBeUndefined();
  });

  it('reads RESPONSES_WEBSOCKET and RESPONSES_WEBSOCKET_IDLE_S, refusing a malformed value', () => {
    expect(responsesSocketSettingsOf({})).toEqual({ enabled: true, idleMs: 300_000 });
    expect(responsesSocketSettingsOf({ RESPONSES_WEBSOCKET: 'off', RESPONSES_WEBSOCKET_IDLE_S: '30' })).toEqual({ enabled: false, idleMs: 30_000 });
    expect(() => responsesSocketSettingsOf({ RESPONSES_WEBSOCKET: 'maybe' })).toThrow(/RESPONSES_WEBSOCKET/);
    expect(() => responsesSocketSettingsOf({ RESPONSES_WEBSOCKET_IDLE_S: '0' })).toThrow(/RESPONSES_WEBSOCKET_IDLE_S/);
  });
});
