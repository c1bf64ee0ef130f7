import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limiterOptions, setLimits } from '../limits/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { callLog, callsConfig } from './support';

// Issue 23, build item 3, property: whatever a client sends, on every billable endpoint, every answer
// to a known key is one call-log row (a replay of an Idempotency-Key is no new call: none), its
// status follows the answer (2xx success, a refusal rejected, a failure error), the usage totals and the CSV
// count the same rows, the rows' costs add up to what the wallet lost, and no hold stays open.
//
// FC_RUNS sets the number of sequences (default 12); each is a new account with two keys.

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startSimulatedGateway(callsConfig, { rateLimits: limiterOptions() });
});
afterAll(() => h.close());

type Kind =
  | { kind: 'chat'; protocol: 'chat' | 'messages' | 'responses' | 'generate'; model: 'own' | 'unknown' | 'image'; narrowKey: boolean; upstream: 'ok' | 'down' }
  | { kind: 'bad-json' }
  | { kind: 'bad-body' }
  | { kind: 'bad-method' }
  | { kind: 'too-expensive' }
  | { kind: 'image'; idempotencyKey: 'none' | 'k1' | 'k2' | 'bad'; prompt: 'a' | 'b'; narrowKey: boolean }
  | { kind: 'unknown-key' };

const kind: fc.Arbitrary<Kind> = fc.oneof(
  fc.record({
    kind: fc.constant('chat' as const),
    protocol: fc.constantFrom('chat' as const, 'messages' as const, 'responses' as const, 'generate' as const),
    model: fc.constantFrom('own' as const, 'own' as const, 'unknown' as const, 'image' as const),
    narrowKey: fc.boolean(),
    upstream: fc.constantFrom('ok' as const, 'ok' as const, 'down' as const),
  }),
  fc.constant({ kind: 'bad-json' as const }),
  fc.constant({ kind: 'bad-body' as const }),
  fc.constant({ kind: 'bad-method' as const }),
  fc.constant({ kind: 'too-expensive' as const }),
  fc.record({
    kind: fc.constant('image' as const),
    idempotencyKey: fc.constantFrom('none' as const, 'k1' as const, 'k2' as const, 'bad' as const),
    prompt: fc.constantFrom('a' as const, 'b' as const),
    narrowKey: fc.boolean(),
  }),
  fc.constant({ kind: 'unknown-key' as const }),
);

const MODELS = { chat: 'chat-model', messages: 'msg-model', responses: 'resp-model', generate: 'gem-model' } as const;
const UNKNOWN_KEY = `sk-${'b'.repeat(73)}`;

function requestOf(k: Kind, keys: { wide: string; narrow: string }): { path: string; body: string; headers: Record<string, string>; known: boolean } {
  const json = (path: string, body: object, key: string, headers: Record<string, string> = {}) => ({ path, body: JSON.stringify(body), headers: { 'x-api-key': key, ...headers }, known: true });
  switch (k.kind) {
    case 'chat': {
      const model = k.model === 'own' ? MODELS[k.protocol] : k.model === 'unknown' ? 'no-such-model' : 'img-model';
      // A narrow key may use only chat-model: anything else is model_not_allowed.
      const key = k.narrowKey ? keys.narrow : keys.wide;
      if (k.upstream === 'down') h.sim.enqueue('http_500', 'http_500', 'http_500');
      const messages = [{ role: 'user', content: 'hello' }];
      if (k.protocol === 'chat') return json('/v1/chat/completions', { model, messages }, key);
      if (k.protocol === 'messages') return json('/v1/messages', { model, max_tokens: 50, messages }, key);
      if (k.protocol === 'responses') return json('/v1/responses', { model, input: 'hello' }, key);
      return json(`/v1beta/models/${model}:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }, key);
    }
    case 'bad-json':
      return { path: '/v1/chat/completions', body: '{"model": "chat-model", "messages": [', headers: { 'x-api-key': keys.wide }, known: true };
    case 'bad-body':
      return json('/v1/messages', { model: 'msg-model', messages: 'not a list' }, keys.wide);
    case 'bad-method':
      return json('/v1beta/models/gem-model:countTokens', { contents: [] }, keys.wide);
    case 'too-expensive':
      return json('/v1/chat/completions', { model: 'chat-model', max_tokens: 100_000_000, messages: [{ role: 'user', content: 'x' }] }, keys.wide);
    case 'image': {
      const idempotency: Record<string, string> = k.idempotencyKey === 'none' ? {} : { 'idempotency-key': k.idempotencyKey === 'bad' ? 'has space' : k.idempotencyKey };
      return json('/v1/images/generations', { model: 'img-model', prompt: k.prompt }, k.narrowKey ? keys.narrow : keys.wide, idempotency);
    }
    case 'unknown-key':
      return { ...json('/v1/chat/completions', { model: 'chat-model', messages: [{ role: 'user', content: 'x' }] }, UNKNOWN_KEY), known: false };
  }
}

/** The row an answer makes: a refusal at submission is `rejected` (a 4xx, or 503 no_channel_available:
 * no upstream was tried; these sequences have no upstream 503), a failure after the hold `error`. */
const expectedStatus = (http: number) => (http < 300 ? 'success' : http < 500 || http === 503 ? 'rejected' : 'error');

describe('call log (property)', () => {
  it('one row per answer to a known key; usage, CSV and the wallet agree with the rows', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(kind, { minLength: 1, maxLength: 10 }), fc.constantFrom(null, 3), async (kinds, rpm) => {
        h.sim.reset();
        const { accountId, key: wide } = await h.t.accountWithKey();
        const narrow = (await h.t.admin('POST', `/accounts/${accountId}/keys`, { name: 'narrow', allowed_models: ['chat-model'] })).json().key as string;
        if (rpm !== null) await setLimits(h.t, accountId, rpm, null);
        const expected: string[] = [];
        for (const k of kinds) {
          const { path, body, headers, known } = requestOf(k, { wide, narrow });
          const response = await fetch(`${h.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
          await response.arrayBuffer();
          // A queued upstream failure the gateway never sent (refused first) must not reach the next call.
          h.sim.reset();
          if (!known) expect(response.status).toBe(401);
          else if (response.headers.get('idempotency-replayed') !== 'true') expected.push(expectedStatus(response.status));
        }
        const rows = await callLog(h, accountId, wide);
        expect(rows.map((r) => r.status).sort()).toEqual(expected.sort());
        const wallet = await h.t.gateway.ledger.wallet(accountId);
        expect(wallet.holds.size).toBe(0);
        expect(rows.filter((r) => r.status !== 'success').every((r) => r.cost_usd === '0.00')).toBe(true);
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 12), seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined },
    );
  });
});
