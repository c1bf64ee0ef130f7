import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { CallSignal } from '../../upstream/upstream-call';
import { Drain } from '../../lifecycle/drain';
import { drainPlugin, trackCall } from './lifecycle';

async function app(drain: Drain) {
  const app = Fastify();
  await app.register(drainPlugin, { drain });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/v1/models', async () => ({ data: [] }));
  app.post('/v1/messages', { config: { shape: 'messages' } }, async () => ({ ok: true }));
  app.get('/admin/v1/accounts', async () => ({ data: [] }));
  app.post('/track', async (request) => {
    const call = new CallSignal(60_000);
    const untrack = trackCall(request, call);
    const seen = { inFlight: drain.inFlight, shuttingDown: call.shuttingDown };
    untrack();
    call.clear();
    return seen;
  });
  return app;
}

describe('while the gateway drains', () => {
  it('refuses requests in their endpoint\'s shape with Connection: close; the probes still answer', async () => {
    const drain = new Drain();
    const a = await app(drain);
    expect((await a.inject({ method: 'GET', url: '/v1/models' })).statusCode).toBe(200);
    drain.begin();
    const chat = await a.inject({ method: 'GET', url: '/v1/models' });
    expect(chat.statusCode).toBe(503);
    expect(chat.headers.connection).toBe('close');
    expect(chat.json()).toEqual({ error: { message: 'the gateway is shutting down; retry the request', type: 'server_error', code: 'gateway_shutting_down' } });
    const messages = await a.inject({ method: 'POST', url: '/v1/messages', payload: {} });
    expect(messages.json()).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'the gateway is shutting down; retry the request' } });
    const gemini = await a.inject({ method: 'POST', url: '/v1beta/models/m:generateContent', payload: {} });
    expect(gemini.json()).toEqual({ error: { code: 503, message: 'the gateway is shutting down; retry the request', status: 'UNAVAILABLE' } });
    const admin = await a.inject({ method: 'GET', url: '/admin/v1/accounts' });
    expect(admin.json()).toEqual({ error: { code: 'gateway_shutting_down', message: 'the gateway is shutting down; retry the request' } });
    const health = await a.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.headers.connection).toBe('close');
    await a.close();
  });

  it('ends the calls in flight when the grace runs out, and a call that starts later at once', async () => {
    const drain = new Drain();
    const a = await app(drain);
    const before = new CallSignal(60_000);
    const untrack = drain.track(before);
    expect(drain.inFlight).toBe(1);
    let idle = false;
    void drain.idle().then(() => (idle = true));
    expect(drain.endCalls()).toBe(1);
    expect(before).toMatchObject({ aborted: true, shuttingDown: true, expired: false });
    untrack();
    await Promise.resolve();
    expect(idle).toBe(true);
    const later = new CallSignal(60_000);
    drain.track(later);
    expect(later.shuttingDown).toBe(true);
    // Requests reach the tracker through the app's decoration.
    expect((await a.inject({ method: 'POST', url: '/track', payload: {} })).json()).toEqual({ inFlight: 2, shuttingDown: true });
    before.clear();
    later.clear();
    await a.close();
  });
});
