/**
 * Who may read GET /metrics (issue 31, item 11): a gateway listening beyond loopback (HOST=0.0.0.0, as
 * the image and the compose file run it) does not serve its metrics to anybody while METRICS_TOKEN is
 * unset, and says so at start. Runs on the embedded storage, and on Postgres when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ env: { HOST: '0.0.0.0' } });
}, 120_000);
afterAll(async () => {
  await t?.close();
});

describe('GET /metrics on a gateway listening on every interface without METRICS_TOKEN', () => {
  it('is refused (403 metrics_token_required), and the start logged why', async () => {
    const res = await t.gateway.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ error: { code: 'metrics_token_required' } });
    expect(res.body).not.toContain('gateway_http_requests_total');
    expect(t.logs.some((line) => line.includes('"level":40') && line.includes('METRICS_TOKEN'))).toBe(true);
    // Nothing else is refused: the health checks are still open.
    expect((await t.gateway.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});
