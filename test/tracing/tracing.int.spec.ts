import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { formatUsd, parseUsd } from '../../src/money/usd';
import { createGateway } from '../../src/runtime/gateway';
import { SettingError, settingsFromEnv } from '../../src/runtime/settings';
import type { Simulator } from '../../src/simulator';
import { chatConfig } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { OtlpReceiver, type ReceivedSpan } from './otlp-receiver';

/** The chat catalogue plus an images channel for its image model. */
function tracedConfig(sim: Simulator): GatewayConfig {
  const config = chatConfig(sim);
  return {
    ...config,
    channels: [
      ...config.channels,
      { id: 'img-a', protocol: 'images', base_url: `${sim.url}/img-a`, api_key: 'key-img-a', group: 'default', priority: 0, weight: 1, models: { 'img-model': 'img-model-upstream' }, tools: [] },
    ],
  };
}

const GRANT = parseUsd('40.44');
const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;
const ERROR = 2;

const traceId = () => randomBytes(16).toString('hex');
const spanId = () => randomBytes(8).toString('hex');

const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const one = (spans: ReceivedSpan[], name: string) => {
  const found = named(spans, name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0]!;
};
const has = (...names: string[]) => (spans: ReceivedSpan[]) => names.every((n) => spans.some((s) => s.name === n));

describe('OpenTelemetry tracing (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  let receiver: OtlpReceiver;
  let h: SimulatedGateway;
  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    // Through the environment, as `serve` reads it; a short batch delay so that spans arrive at once.
    h = await startSimulatedGateway(tracedConfig, {
      chatTimeoutMs: 5000,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gateway-under-test', OTEL_BSP_SCHEDULE_DELAY: '10' },
    });
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });
  beforeEach(() => h.sim.reset());

  async function client() {
    const { accountId, keyId, key } = await h.t.accountWithKey();
    return { accountId, keyId, key, openai: new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }) };
  }

  it("continues the caller's trace: the request span is the child of its traceparent; authentication, reservation, the upstream attempt and the settlement are its children; the upstream gets a traceparent naming the attempt", async () => {
    const { accountId, keyId, openai } = await client();
    const trace = traceId();
    const parent = spanId();
    const { data, response } = await openai.chat.completions
      .create({ model: 'chat-model', messages: [{ role: 'user', content: 'Hello there' }] }, { headers: { traceparent: `00-${trace}-${parent}-01`, tracestate: 'vendor=opaque' } })
      .withResponse();
    const requestId = response.headers.get('x-gateway-trace')!;
    expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);

    const spans = await receiver.trace(trace, has('POST /v1/chat/completions', 'gateway.settle'));
    const root = one(spans, 'POST /v1/chat/completions');
    expect(root).toMatchObject({ kind: SERVER, parentSpanId: parent });
    expect(root.status.code).not.toBe(ERROR);
    expect(root.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/chat/completions',
      'url.path': '/v1/chat/completions',
      'http.response.status_code': 200,
      // The request id is the gateway's own (several calls may share one caller's trace).
      'gateway.request_id': requestId,
      'gateway.account_id': accountId,
      'gateway.key_id': keyId,
    });
    expect(root.resource['service.name']).toBe('gateway-under-test');

    const children = spans.filter((s) => s !== root);
    expect(children.map((s) => s.name).sort()).toEqual(['gateway.authenticate', 'gateway.reserve', 'gateway.settle', 'gateway.upstream']);
    for (const child of children) expect(child.parentSpanId).toBe(root.spanId);

    expect(one(spans, 'gateway.authenticate')).toMatchObject({ kind: INTERNAL, attributes: { 'gateway.outcome': 'admitted' } });

    const reserved = (await h.t.gateway.storage.store.readStream(`wallet-${accountId}`)).find((e) => e.type === 'FundsReserved');
    expect(one(spans, 'gateway.reserve').attributes).toMatchObject({
      'gateway.hold_id': requestId,
      'gateway.hold.amount_usd': formatUsd(BigInt((reserved!.data as { amount: string }).amount)),
      'gateway.outcome': 'held',
    });

    const upstream = one(spans, 'gateway.upstream');
    expect(upstream).toMatchObject({ kind: CLIENT });
    expect(upstream.status.code).not.toBe(ERROR);
    expect(upstream.attributes).toMatchObject({
      'gateway.channel': 'cc-a',
      'gateway.attempt': 1,
      'gen_ai.request.model': 'chat-model-upstream',
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
    });
    expect(upstream.events.map((e) => e.name)).toContain('response headers');
    const [forwarded] = h.sim.requests;
    expect(forwarded!.headers.traceparent).toBe(`00-${trace}-${upstream.spanId}-01`);
    expect(forwarded!.headers.tracestate).toBe('vendor=opaque');

    // The settlement bills what the upstream reported.
    const settle = one(spans, 'gateway.settle');
    const charged = GRANT - (await h.t.gateway.ledger.wallet(accountId)).balance;
    expect(settle.attributes).toMatchObject({
      'gateway.hold_id': requestId,
      'gateway.call.status': 'success',
      'gateway.charge_usd': formatUsd(charged),
      'gen_ai.usage.input_tokens': data.usage!.prompt_tokens,
      'gen_ai.usage.output_tokens': data.usage!.completion_tokens,
    });
  });

  it('starts a trace whose id is the x-gateway-trace request id when the caller sends none; a failed attempt is an error span, each attempt propagated on its own', async () => {
    const { openai } = await client();
    h.sim.enqueue('http_500');
    const { data: stream, response } = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'one two' }], stream: true }).withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Echo: one two');
    const requestId = response.headers.get('x-gateway-trace')!;
    const trace = requestId.slice('req_'.length);

    const spans = await receiver.trace(trace, has('POST /v1/chat/completions', 'gateway.settle'));
    const root = one(spans, 'POST /v1/chat/completions');
    expect(root.parentSpanId).toBe('');
    expect(root.attributes['gateway.request_id']).toBe(requestId);

    const attempts = named(spans, 'gateway.upstream').sort((a, b) => Number(a.attributes['gateway.attempt']) - Number(b.attributes['gateway.attempt']));
    expect(attempts.map((a) => a.attributes['gateway.channel'])).toEqual(['cc-a', 'cc-b']);
    expect(attempts[0]!.status.code).toBe(ERROR);
    expect(attempts[0]!.attributes).toMatchObject({ 'http.response.status_code': 500, 'error.type': '500' });
    expect(attempts[1]!.status.code).not.toBe(ERROR);
    expect(h.sim.requests.map((r) => r.headers.traceparent)).toEqual(attempts.map((a) => `00-${trace}-${a.spanId}-01`));
    expect(one(spans, 'gateway.settle').attributes['gateway.call.status']).toBe('success');
  });

  it('traces an image call the same way: its reservation, attempt (propagated) and settlement', async () => {
    const { key } = await client();
    const trace = traceId();
    const response = await fetch(`${h.baseUrl}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${trace}-${spanId()}-01` },
      body: JSON.stringify({ model: 'img-model', prompt: 'a red cube' }),
    });
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-gateway-trace')!;

    const spans = await receiver.trace(trace, has('POST /v1/images/generations', 'gateway.settle'));
    const root = one(spans, 'POST /v1/images/generations');
    expect(spans.filter((s) => s !== root).map((s) => s.name).sort()).toEqual(['gateway.authenticate', 'gateway.reserve', 'gateway.settle', 'gateway.upstream']);
    expect(one(spans, 'gateway.reserve').attributes).toMatchObject({ 'gateway.hold_id': requestId, 'gateway.hold.amount_usd': '0.04' });
    const upstream = one(spans, 'gateway.upstream');
    expect(upstream.attributes).toMatchObject({ 'gateway.channel': 'img-a', 'gen_ai.request.model': 'img-model-upstream' });
    expect(h.sim.requests.at(-1)!.headers.traceparent).toBe(`00-${trace}-${upstream.spanId}-01`);
    expect(one(spans, 'gateway.settle').attributes).toMatchObject({ 'gateway.charge_usd': '0.04', 'gateway.call.status': 'success' });
  });

  it('records a refused key on the authentication span, and a 5xx-free request span', async () => {
    const trace = traceId();
    const response = await fetch(`${h.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer sk-${'x'.repeat(73)}`, 'content-type': 'application/json', traceparent: `00-${trace}-${spanId()}-01` },
      body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(401);
    const spans = await receiver.trace(trace, has('POST /v1/chat/completions', 'gateway.authenticate'));
    expect(spans.map((s) => s.name).sort()).toEqual(['POST /v1/chat/completions', 'gateway.authenticate']);
    expect(one(spans, 'gateway.authenticate').attributes).toMatchObject({ 'gateway.outcome': 'refused', 'gateway.refusal': 'invalid_api_key' });
    const root = one(spans, 'POST /v1/chat/completions');
    expect(root.attributes['http.response.status_code']).toBe(401);
    expect(root.status.code).not.toBe(ERROR);
  });

  it("keeps a caller's unsampled trace unsampled (nothing recorded, the trace still propagated), and never traces probes", async () => {
    const { openai } = await client();
    const unsampled = traceId();
    await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'quiet' }] }, { headers: { traceparent: `00-${unsampled}-${spanId()}-00` } });
    expect(h.sim.requests.at(-1)!.headers.traceparent).toMatch(new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`));
    const probe = traceId();
    expect((await fetch(`${h.baseUrl}/healthz`, { headers: { traceparent: `00-${probe}-${spanId()}-01` } })).status).toBe(200);

    // A later sampled call's spans arrive after anything the two above would have exported.
    const later = traceId();
    await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'loud' }] }, { headers: { traceparent: `00-${later}-${spanId()}-01` } });
    await receiver.trace(later, has('gateway.settle'));
    expect(receiver.spans.filter((s) => s.traceId === unsampled || s.traceId === probe)).toEqual([]);
  });

  it('ends the spans of a stream the client left: the request span marked incomplete, the attempt ended, the interrupted settlement recorded', async () => {
    const { key } = await client();
    const abort = new AbortController();
    const response = await fetch(`${h.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-model', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight [[sim:slow_stream:100]]' }] }),
      signal: abort.signal,
    });
    const trace = response.headers.get('x-gateway-trace')!.slice('req_'.length);
    await response.body!.getReader().read();
    abort.abort();

    const spans = await receiver.trace(trace, has('POST /v1/chat/completions', 'gateway.upstream', 'gateway.settle'));
    expect(one(spans, 'POST /v1/chat/completions').attributes).toMatchObject({ 'http.response.status_code': 200, 'gateway.response_incomplete': true });
    expect(one(spans, 'gateway.settle').attributes).toMatchObject({ 'gateway.call.status': 'interrupted', 'gateway.call.error_code': 'client_disconnected' });
  });

  it('exports OTLP/HTTP with JSON bodies', () => {
    expect(receiver.contentTypes.length).toBeGreaterThan(0);
    expect(new Set(receiver.contentTypes)).toEqual(new Set(['application/json']));
  });
});

describe('an OTEL_* setting the gateway cannot honour', () => {
  it('stops the start with a SettingError naming it, before anything is opened', async () => {
    const settings = settingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', DATA_DIR: '/nonexistent/never-created' });
    await expect(createGateway(settings)).rejects.toThrow(SettingError);
    await expect(createGateway(settings)).rejects.toThrow(/^OTEL_EXPORTER_OTLP_PROTOCOL is "grpc"/);
  });
});

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  let h: SimulatedGateway;
  beforeAll(async () => {
    h = await startSimulatedGateway(tracedConfig, { chatTimeoutMs: 5000 });
  });
  afterAll(() => h?.close());

  it('neither forwards nor makes a traceparent', async () => {
    const { key } = await h.t.accountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] }, { headers: { traceparent: `00-${traceId()}-${spanId()}-01` } });
    await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(h.sim.requests).toHaveLength(2);
    for (const request of h.sim.requests) expect(request.headers.traceparent).toBeUndefined();
  });
});

describe('an OTLP endpoint that refuses the spans', () => {
  let receiver: OtlpReceiver;
  let h: SimulatedGateway;
  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    h = await startSimulatedGateway(tracedConfig, { env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_BSP_SCHEDULE_DELAY: '10' } });
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  const logged = async (message: string) => {
    const deadline = Date.now() + 15_000;
    while (!h.t.logs.some((line) => line.includes(message))) {
      if (Date.now() > deadline) throw new Error(`never logged: ${message}`);
      await sleep(20);
    }
  };

  it('is told once when exports start failing and once when they work again; requests are served meanwhile', async () => {
    receiver.failWith = 400;
    for (let i = 0; i < 3; i++) {
      expect((await fetch(`${h.baseUrl}/v1/models`)).status).toBe(401);
      await sleep(30);
    }
    await logged('tracing: spans cannot be exported');
    receiver.failWith = null;
    const trace = traceId();
    expect((await fetch(`${h.baseUrl}/v1/models`, { headers: { traceparent: `00-${trace}-${spanId()}-01` } })).status).toBe(401);
    await receiver.trace(trace, (spans) => spans.length > 0);
    await logged('tracing: spans are exported again');
    expect(h.t.logs.filter((line) => line.includes('tracing: spans cannot be exported'))).toHaveLength(1);
  });
});
