import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { postgresSql } from '../../src/storage/sql';
import { freePort } from '../support/child-gateway';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { PrivatePostgres, postgresBinaries } from '../support/private-postgres';

// Issue 18, item 3: /healthz stays liveness; /readyz answers 200 only when the event store, the
// projection database and Redis (when configured) answer and the projections are within
// READY_MAX_PROJECTION_LAG_S, else 503 naming the failing part. No API key, bounded in time.

const REDIS_SERVER = '/usr/bin/redis-server';

let t: TestGateway | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

async function readyz(g: TestGateway) {
  const response = await g.gateway.app.inject({ method: 'GET', url: '/readyz' });
  return { status: response.statusCode, body: response.json() as { status: string; failing: string[]; checks: Record<string, { status: string; error?: string }> } };
}

/** Polls /readyz until its status is `status`; returns that answer. */
async function readyzUntil(g: TestGateway, status: number) {
  let last = await readyz(g);
  for (let i = 0; i < 300 && last.status !== status; i++) {
    await new Promise((r) => setTimeout(r, 100));
    last = await readyz(g);
  }
  expect(last.status, JSON.stringify(last.body)).toBe(status);
  return last;
}

describe('/readyz', () => {
  it('is 200 without an API key when every part answers; /healthz is liveness', async () => {
    t = await startTestGateway();
    const { status, body } = await readyz(t);
    expect(status).toBe(200);
    expect(body).toEqual({
      status: 'ready',
      failing: [],
      checks: {
        event_store: { status: 'ok' },
        database: { status: 'ok' },
        projections: { status: 'ok', lag_s: expect.any(Number) },
        warm_start: { status: 'ok', keys: 0, accounts: 0, ms: expect.any(Number) },
      },
    });
    expect((await t.gateway.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('is 503 naming the projections while they are further behind the log than READY_MAX_PROJECTION_LAG_S', async () => {
    t = await startTestGateway({ readyMaxProjectionLagS: 0.5, readiness: { cacheMs: 0 } });
    await t.gateway.runner.stop();
    // Events the projections do not apply while their runner is stopped.
    await t.gateway.ledger.openAccount('behind');
    const behind = await readyzUntil(t, 503);
    expect(behind.body.failing).toEqual(['projections']);
    expect(behind.body.checks.projections!.error).toMatch(/ behind the log \(READY_MAX_PROJECTION_LAG_S is 0\.5\)$/);
    t.gateway.runner.start(() => {});
    await readyzUntil(t, 200);
  });
});

describe.skipIf(!existsSync(REDIS_SERVER))('/readyz and Redis', () => {
  let redis: ChildProcess | null = null;
  afterAll(() => {
    redis?.kill('SIGKILL');
  });

  it('is 503 naming redis while the limits\' Redis is stopped, and 200 again once it is back', async () => {
    const port = await freePort();
    const startRedis = () => spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    redis = startRedis();
    t = await startTestGateway({ rateLimits: { redisUrl: `redis://127.0.0.1:${port}`, keyPrefix: `gw:test:${randomBytes(6).toString('hex')}:` }, readiness: { cacheMs: 0 } });
    const up = await readyzUntil(t, 200);
    expect(up.body.checks.redis).toEqual({ status: 'ok' });

    const stopped = new Promise((r) => redis!.once('exit', r));
    redis.kill('SIGTERM');
    await stopped;
    const down = await readyzUntil(t, 503);
    expect(down.body.failing).toEqual(['redis']);
    expect(down.body.checks.redis).toEqual({ status: 'failing', error: 'Redis cannot be reached' });
    // Liveness is not readiness: the process is fine.
    expect((await t.gateway.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

    redis = startRedis();
    await readyzUntil(t, 200);
  });
});

// The projection database and the events table on a Postgres server of the test's own, which it
// stops and pauses (embedded, the database lives in the process and cannot go away by itself).
describe.skipIf(!postgresBinaries || !process.env.DATABASE_URL)('/readyz and the database', () => {
  let cluster: PrivatePostgres | null = null;
  afterAll(async () => {
    await cluster?.destroy();
  });

  it('is 503 naming the database and the event store while the server is down or hung, within the check time, and 200 once it is back', async () => {
    cluster = await PrivatePostgres.create();
    const sql = postgresSql(cluster.url);
    const db = { sql, label: 'private', another: () => sql, drop: () => sql.close() };
    t = await startTestGateway({ db, readiness: { cacheMs: 0, timeoutMs: 1_000 } });
    await readyzUntil(t, 200);

    await cluster.stop('fast');
    const down = await readyzUntil(t, 503);
    expect(down.body.failing).toEqual(expect.arrayContaining(['event_store', 'database']));
    expect(down.body.checks.database).toEqual({ status: 'failing', error: 'failed (the gateway log has the error)' });
    expect(t.logs.some((line) => line.includes('readiness: a part is failing') && line.includes('"part":"database"'))).toBe(true);
    await cluster.start();
    await readyzUntil(t, 200);

    // Hung: connections open, nothing answers. The probes are still answered (within the check time).
    cluster.freeze();
    try {
      const hung = await readyzUntil(t, 503);
      expect(hung.body.checks.database).toEqual({ status: 'failing', error: 'no answer within 1 s' });
      expect((await readyz(t)).body.checks.database).toEqual({ status: 'failing', error: 'no answer within 1 s' });
    } finally {
      cluster.thaw();
    }
    await readyzUntil(t, 200);
  });
});
