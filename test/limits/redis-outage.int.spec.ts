import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatHarness } from '../chat/support';
import { freePort } from '../support/child-gateway';
import { client, setLimits, startLimitsHarness } from './support';

// Redis holds the shared rate limits. While it cannot be reached, requests go through without
// limits (fail open), at once: not each after the client's 2 s command timeout, and with one log
// line for the outage rather than one per request.

const REDIS_SERVER = '/usr/bin/redis-server';

const lines = (h: ChatHarness, text: string) => h.t.logs.filter((line) => line.includes(text)).length;

describe('rate limits while Redis is unreachable', () => {
  let h: ChatHarness;
  let port: number;
  let redis: ChildProcess | null = null;

  beforeAll(async () => {
    // Nothing listens on this port (yet).
    port = await freePort();
    h = await startLimitsHarness({ chatTimeoutMs: 10_000, rateLimits: { redisUrl: `redis://127.0.0.1:${port}`, keyPrefix: `gw:test:${randomBytes(6).toString('hex')}:` } });
  });
  afterAll(async () => {
    await h?.close();
    redis?.kill('SIGKILL');
  });

  it('lets the requests of a limited account through at once, and logs the outage once', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    await setLimits(h.t, accountId, 2, 1);
    const api = client(h.baseUrl, key);
    const started = performance.now();
    for (let i = 0; i < 8; i++) {
      const response = await api.chat();
      expect(response.status).toBe(200);
      // Unlimited while the limits cannot be checked: no limit headers.
      expect(response.headers.get('x-ratelimit-limit-requests')).toBeNull();
      await response.text();
    }
    // Each request used to wait for Redis (up to the 2 s command timeout): 8 took about 12 s.
    expect(performance.now() - started).toBeLessThan(6_000);
    expect(lines(h, 'rate limiter unavailable; request let through')).toBe(0);
    expect(lines(h, 'Redis unreachable')).toBe(1);
  });

  it.skipIf(!existsSync(REDIS_SERVER) || !process.env.REDIS_URL)('applies the limits again once Redis is back', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    await setLimits(h.t, accountId, 2, null);
    const api = client(h.baseUrl, key);
    redis = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    // The client dials again with a back-off of up to 2 s; until then requests still go through.
    let statuses: number[] = [];
    for (let round = 0; round < 100 && !statuses.includes(429); round++) {
      if (round > 0) await new Promise((r) => setTimeout(r, 100));
      const response = await api.chat();
      await response.text();
      statuses = [...statuses, response.status];
    }
    expect(statuses).toContain(429);
    expect(lines(h, 'Redis reachable again')).toBe(1);
  });
});

describe('rate limits while Redis accepts connections and never answers', () => {
  let h: ChatHarness;
  let silent: Server;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    // A server that takes the connection and says nothing: every command waits for its timeout.
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    h = await startLimitsHarness({ chatTimeoutMs: 10_000, rateLimits: { redisUrl: `redis://127.0.0.1:${port}`, keyPrefix: 'gw:test:silent:' } });
  });
  afterAll(async () => {
    await h?.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent?.close(resolve));
  });

  it('waits for one command timeout, then lets the requests through at once until Redis answers', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    await setLimits(h.t, accountId, 2, null);
    const api = client(h.baseUrl, key);
    const first = await api.chat();
    expect(first.status).toBe(200);
    await first.text();
    const started = performance.now();
    for (let i = 0; i < 5; i++) {
      const response = await api.chat();
      expect(response.status).toBe(200);
      await response.text();
    }
    // Each used to wait out the 2 s command timeout: 10 s for the five.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(lines(h, 'rate limiter unavailable; request let through')).toBe(0);
    expect(lines(h, 'Redis unreachable')).toBe(1);
  });
});
