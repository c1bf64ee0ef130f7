import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';

const ORIGIN = 'https://app.example.com';
const preflight = (t: TestGateway, url: string, origin = ORIGIN) =>
  t.gateway.app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-stainless-os' },
  });

describe('CORS', () => {
  let off: TestGateway;
  let on: TestGateway;
  beforeAll(async () => {
    off = await startTestGateway();
    on = await startTestGateway({ env: { CORS_ORIGINS: `${ORIGIN}, http://localhost:5173` } });
  });
  afterAll(async () => {
    await off.close();
    await on.close();
  });

  it('is off by default: no browser origin is allowed', async () => {
    const answer = await preflight(off, '/v1/chat/completions');
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    const call = await off.gateway.app.inject({ method: 'GET', url: '/v1/models', headers: { origin: ORIGIN } });
    expect(call.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('with CORS_ORIGINS, the client API answers those origins: preflights, and refusals a browser must read', async () => {
    const answer = await preflight(on, '/v1/chat/completions');
    expect(answer.statusCode).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(answer.headers['access-control-allow-headers']).toBe('authorization, content-type, x-stainless-os');
    expect(String(answer.headers['access-control-allow-methods'])).toContain('POST');

    const refused = await on.gateway.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { origin: ORIGIN, authorization: 'Bearer nope' }, payload: {} });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(refused.headers['access-control-expose-headers'])).toContain('x-gateway-trace');
    expect(refused.json().error.code).toBe('invalid_api_key');
  });

  it('never for another origin, the admin API or the console', async () => {
    expect((await preflight(on, '/v1/chat/completions', 'https://evil.example.net')).headers['access-control-allow-origin']).toBeUndefined();
    expect((await preflight(on, '/admin/v1/accounts')).headers['access-control-allow-origin']).toBeUndefined();
    expect((await preflight(on, '/console/keys')).headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('TRUST_PROXY', () => {
  const accessIps = (t: TestGateway, from: number) =>
    t.logs
      .slice(from)
      .map((line) => JSON.parse(line) as { msg: string; ip?: string })
      .filter((line) => line.msg === 'access')
      .map((line) => line.ip);

  it("is off by default: the access log names the connection's address, whatever X-Forwarded-For says", async () => {
    const t = await startTestGateway();
    try {
      const from = t.logs.length;
      await t.gateway.app.inject({ method: 'GET', url: '/v1/models', remoteAddress: '10.1.2.3', headers: { 'x-forwarded-for': '203.0.113.9' } });
      expect(accessIps(t, from)).toEqual(['10.1.2.3']);
    } finally {
      await t.close();
    }
  });

  it('trusts the proxies it names: the client address from X-Forwarded-For', async () => {
    const t = await startTestGateway({ env: { TRUST_PROXY: '10.0.0.0/8' } });
    try {
      const from = t.logs.length;
      await t.gateway.app.inject({ method: 'GET', url: '/v1/models', remoteAddress: '10.1.2.3', headers: { 'x-forwarded-for': '203.0.113.9' } });
      await t.gateway.app.inject({ method: 'GET', url: '/v1/models', remoteAddress: '192.0.2.7', headers: { 'x-forwarded-for': '203.0.113.9' } });
      expect(accessIps(t, from)).toEqual(['203.0.113.9', '192.0.2.7']);
    } finally {
      await t.close();
    }
  });
});
