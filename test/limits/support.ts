import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { RateLimiterOptions } from '../../src/limits';
import { chatConfig, type ChatHarness } from '../chat/support';
import { startSimulatedGateway, type TestGateway } from '../support/gateway';

/** Redis (with a key prefix of this run's own) when REDIS_URL is set, else in-process. */
export function limiterOptions(extra: RateLimiterOptions = {}): RateLimiterOptions {
  const url = process.env.REDIS_URL;
  return url ? { redisUrl: url, keyPrefix: `gw:test:${randomBytes(6).toString('hex')}:`, ...extra } : { ...extra };
}

export async function setLimits(t: TestGateway, accountId: string, rpm: number | null, concurrency: number | null) {
  const response = await t.admin('PUT', `/accounts/${accountId}/limits`, { rpm, concurrency });
  expect(response.statusCode, response.body).toBe(200);
}

/** The spec's five names, written out here so that a test fails when the gateway's list is wrong. */
export const RATE_HEADERS = [
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-concurrency',
  'x-ratelimit-remaining-concurrency',
] as const;

export function rateHeaders(response: Response): Record<string, string | null> {
  return Object.fromEntries(RATE_HEADERS.map((name) => [name, response.headers.get(name)]));
}

/** A client of one gateway, speaking each protocol with fetch (to see every header). */
export function client(baseUrl: string, key: string) {
  const auth = { authorization: `Bearer ${key}` };
  const post = (path: string, body: unknown, init: RequestInit = {}) =>
    fetch(`${baseUrl}${path}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body), ...init });
  return {
    chat: (content = 'hello', init: RequestInit = {}, extra: object = {}) =>
      post('/v1/chat/completions', { model: 'chat-model', messages: [{ role: 'user', content }], ...extra }, init),
    messages: () => post('/v1/messages', { model: 'msg-model', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] }),
    generate: () => post('/v1beta/models/gem-model:generateContent', { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    get: (path: string) => fetch(`${baseUrl}${path}`, { headers: auth }),
  };
}

/** The chat harness of test/chat with rate limiter options: simulator, gateway, listening. */
export function startLimitsHarness(options: { rateLimits: RateLimiterOptions; chatTimeoutMs?: number }): Promise<ChatHarness> {
  return startSimulatedGateway(chatConfig, options);
}
