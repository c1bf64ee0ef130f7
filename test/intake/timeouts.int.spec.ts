import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatConfig } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { jsonHead, sendPartial } from './support';

type Json = Record<string, any>;

/** The spec's timings scaled down: every limit here is a second or two. */
const TIMINGS = { headersMs: 1_000, requestMs: 2_000, idleMs: 2_500, jsonDeadlineMs: 1_000 };

let g: SimulatedGateway;
let key: string;

beforeAll(async () => {
  g = await startSimulatedGateway(chatConfig, { intakeTimings: TIMINGS });
  key = (await g.t.accountWithKey()).key;
});
afterAll(() => g.close());

/** Far longer than any of the limits: a connection still open then was never going to close. */
const WAIT = { waitMs: 15_000 };

describe('a client that sends slowly is cut off', () => {
  it('headers that never end: the connection is closed', async () => {
    const reply = await sendPartial(g.baseUrl, 'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway.test\r\n', '', {
      ...WAIT,
      trickle: { chunk: 'X-Slow: 1\r\n', everyMs: 100 },
    });
    expect(reply.closed).toBe(true);
    expect(reply.status).toBe(408);
  });

  it('a JSON body trickled past its deadline: 408 in the endpoint shape, and the connection closed', async () => {
    const reply = await sendPartial(g.baseUrl, jsonHead('POST', '/v1/messages', 10_000, { 'x-api-key': key }), '{"model":', { ...WAIT, trickle: { chunk: ' ', everyMs: 100 } });
    expect(reply.closed).toBe(true);
    expect(reply.status).toBe(408);
    expect(JSON.parse(reply.body)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'the request body did not arrive within 1 s' } });
  });

  it('a multipart upload trickled past the whole-request time: closed', async () => {
    const head = [
      'POST /v1/images/edits HTTP/1.1',
      'Host: gateway.test',
      `x-api-key: ${key}`,
      'Content-Type: multipart/form-data; boundary=b',
      'Content-Length: 100000',
    ].join('\r\n');
    const reply = await sendPartial(g.baseUrl, `${head}\r\n\r\n`, '--b\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\n', {
      ...WAIT,
      trickle: { chunk: 'x', everyMs: 100 },
    });
    expect(reply.closed).toBe(true);
    expect(reply.status).toBe(408);
  });
});

describe('the limits never cut an answer', () => {
  it('a stream that lasts longer than the request and idle times arrives whole', async () => {
    g.sim.enqueue(['reply_tokens:24', 'slow_stream:250']);
    const started = Date.now();
    const response = await fetch(`${g.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ model: 'chat-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(Date.now() - started).toBeGreaterThan(TIMINGS.idleMs);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('a request that arrives in time is answered as usual', async () => {
    const response = await fetch(`${g.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ model: 'msg-model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as Json).type).toBe('message');
  });
});
