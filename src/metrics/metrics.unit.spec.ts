import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from './metrics';
import { isLoopbackHost, metricsRoute, metricsTokenOf } from './route';

async function app(counts: () => Promise<ReadonlyMap<string, number>>, token?: string, host = '127.0.0.1') {
  const errors: unknown[] = [];
  const metrics = new GatewayMetrics({ parkedEvents: counts }, { onError: (error) => errors.push(error), sampleMs: 0 });
  const server = Fastify();
  await server.register(metricsRoute({ metrics, token, host }));
  return { server, errors };
}

describe('GET /metrics', () => {
  it('answers the parked events per projection in the text format, each gateway with its own registry', async () => {
    const first = await app(async () => new Map([['accounts', 2], ['keys', 0]]));
    const second = await app(async () => new Map([['accounts', 5]]));
    const response = await first.server.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/plain');
    expect(response.body).toContain('# TYPE gateway_projection_parked_events gauge');
    expect(response.body).toContain('gateway_projection_parked_events{projection="accounts"} 2');
    expect(response.body).toContain('gateway_projection_parked_events{projection="keys"} 0');
    expect((await second.server.inject({ method: 'GET', url: '/metrics' })).body).toContain('gateway_projection_parked_events{projection="accounts"} 5');
  });

  it('keeps the last values and still answers when a value cannot be read', async () => {
    let fail = false;
    const { server, errors } = await app(async () => {
      if (fail) throw new Error('database unreachable');
      return new Map([['ledger', 3]]);
    });
    await server.inject({ method: 'GET', url: '/metrics' });
    fail = true;
    const response = await server.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('gateway_projection_parked_events{projection="ledger"} 3');
    expect(errors).toHaveLength(1);
  });

  it('asks for METRICS_TOKEN as a bearer token when it is set', async () => {
    const { server } = await app(async () => new Map(), 'scrape-secret');
    expect((await server.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    expect((await server.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode).toBe(401);
    expect((await server.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-secret' } })).statusCode).toBe(200);
    expect(metricsTokenOf({ METRICS_TOKEN: '  ' })).toBeUndefined();
    expect(metricsTokenOf({ METRICS_TOKEN: ' t ' })).toBe('t');
  });

  it('is refused on a listener other than loopback while METRICS_TOKEN is unset, saying what to do', async () => {
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'gateway.internal']) {
      const { server } = await app(async () => new Map(), undefined, host);
      const refused = await server.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer anything' } });
      expect(refused.statusCode, host).toBe(403);
      expect(refused.json()).toMatchObject({ error: { code: 'metrics_token_required' } });
      expect(refused.json().error.message).toContain('METRICS_TOKEN');
      expect(refused.body).not.toContain('gateway_');
    }
  });

  it('asks for the token on a listener other than loopback when METRICS_TOKEN is set', async () => {
    const { server } = await app(async () => new Map(), 'scrape-secret', '0.0.0.0');
    expect((await server.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    expect((await server.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-secret' } })).statusCode).toBe(200);
  });

  it('stays open without a token on a loopback listener (only this host reaches it)', async () => {
    for (const host of ['127.0.0.1', '::1', 'localhost', '127.0.0.2', '::ffff:127.0.0.1', 'LOCALHOST', '[::1]']) {
      expect(isLoopbackHost(host), host).toBe(true);
      const { server } = await app(async () => new Map(), undefined, host);
      expect((await server.inject({ method: 'GET', url: '/metrics' })).statusCode, host).toBe(200);
    }
    for (const host of ['0.0.0.0', '::', '', '128.0.0.1', '::ffff:10.0.0.1', 'localhost.example', 'my-localhost']) expect(isLoopbackHost(host), host).toBe(false);
  });
});
