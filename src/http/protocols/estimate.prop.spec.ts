/**
 * Property tests of the chat pre-charge against what an upstream may bill (issue 21, item 5).
 *
 * A random request of a random client protocol (messages, output cap or none, `n` /
 * `candidateCount`) goes through the real adapter's `inspect`, natively or translated for a channel
 * of another protocol, and the hold is priced with `callEstimate` and `costOf`, as the relay does.
 * The upstream's usage is then drawn from what the request *sent to the channel* allows, read off
 * the channel's body by the spec's rules alone (not by the gateway's adapters): the prompt the
 * channel counts (the simulator's formula, JSON bytes / 4), and up to the output cap (else
 * min(model default, 32768), Billing 1) for each answer the body asks for.
 *
 * 1. A settlement never exceeds its hold: costOf(usage) ≤ hold.
 * 2. A key never spends past its cap (by more than one call's hold, as the issue allows): calls
 *    reserved through the real wallet decider with the key's cap and settled, in any order, on
 *    such usage.
 *
 * Cache writes are left out of the usage: their 1.25× hold is the pricing work of issue 23.
 * FC_RUNS overrides the number of runs (default 2,000 requests, 200 call sequences).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SIGNUP_GRANT, decide, type WalletCommand } from '../../commands/wallet/decider';
import { available, evolve, initialWalletState, type WalletState } from '../../commands/wallet/state';
import type { ChatProtocol, ModelConfig } from '../../config/schema';
import type { ProtocolAdapter, Usage } from '../../upstream/contract';
import { costOf, holdAmount, MAX_ESTIMATED_OUTPUT, pricingOf } from '../../upstream/pricing';
import { chatCompletions } from '../../upstream/protocols/chat-completions';
import { generateContent } from '../../upstream/protocols/generate-content';
import { messages } from '../../upstream/protocols/messages';
import { responses } from '../../upstream/protocols/responses';
import { promptTokens } from '../../simulator';
import { callEstimate } from './estimate';
import { decodeCall, translationFor } from './translated';

const RUNS = Number(process.env.FC_RUNS ?? 2_000);
const ADAPTERS: Record<ChatProtocol, ProtocolAdapter> = { 'chat-completions': chatCompletions, messages, responses, 'generate-content': generateContent };
const PROTOCOLS = Object.keys(ADAPTERS) as ChatProtocol[];

// ---------------------------------------------------------------------------
// A model, a request, and the channel it goes to
// ---------------------------------------------------------------------------

/** A price of 0 to 100 USD per 1M tokens, up to 9 decimals. */
const price = fc.bigInt({ min: 0n, max: 100_000_000_000n }).map((units) => `${units / 1_000_000_000n}.${String(units % 1_000_000_000n).padStart(9, '0')}`);

const model: fc.Arbitrary<ModelConfig> = fc
  .record({
    input: price,
    output: price,
    cachedShare: fc.integer({ min: 0, max: 100 }),
    defaultMax: fc.option(fc.integer({ min: 1, max: 200_000 }), { nil: undefined }),
    longContext: fc.option(fc.record({ threshold_tokens: fc.integer({ min: 1, max: 5_000 }), multiplier: fc.constantFrom('1.5', '2') }), { nil: undefined }),
  })
  .map(({ input, output, cachedShare, defaultMax, longContext }) => ({
    id: 'm',
    owned_by: 'test',
    kind: 'text' as const,
    aliases: [],
    callable: true,
    endpoint_type: null,
    capabilities: [],
    // A cached token never costs more than an uncached one.
    price: { input, output, cached_input: ((Number(input) * cachedShare) / 100).toFixed(9) },
    ...(defaultMax !== undefined ? { default_max_tokens: defaultMax } : {}),
    ...(longContext ? { long_context: longContext } : {}),
  }) as ModelConfig);

interface Request {
  readonly client: ChatProtocol;
  readonly channel: ChatProtocol;
  readonly body: Record<string, unknown>;
  readonly params: { model?: string; stream?: boolean };
}

const texts = fc.array(fc.string({ unit: 'grapheme', maxLength: 200 }), { minLength: 1, maxLength: 4 });
const cap = fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: null });

function body(client: ChatProtocol, turns: string[], maxTokens: number | null, choices: number | null, stream: boolean): Record<string, unknown> {
  switch (client) {
    case 'chat-completions':
      return {
        model: 'm',
        messages: turns.map((content) => ({ role: 'user', content })),
        stream,
        ...(maxTokens !== null ? { max_tokens: maxTokens } : {}),
        ...(choices !== null ? { n: choices } : {}),
      };
    case 'generate-content':
      return {
        contents: turns.map((text) => ({ role: 'user', parts: [{ text }] })),
        generationConfig: { ...(maxTokens !== null ? { maxOutputTokens: maxTokens } : {}), ...(choices !== null ? { candidateCount: Math.min(choices, 8) } : {}) },
      };
    case 'messages':
      return { model: 'm', max_tokens: maxTokens ?? 1024, stream, messages: turns.map((content) => ({ role: 'user', content })) };
    case 'responses':
      return { model: 'm', stream, input: turns.map((content) => ({ role: 'user', content })), ...(maxTokens !== null ? { max_output_tokens: maxTokens } : {}) };
  }
}

const request: fc.Arbitrary<Request> = fc
  .record({
    client: fc.constantFrom(...PROTOCOLS),
    translated: fc.boolean(),
    other: fc.integer({ min: 1, max: 3 }),
    turns: texts,
    maxTokens: cap,
    choices: fc.option(fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 128 })), { nil: null }),
    stream: fc.boolean(),
  })
  .map(({ client, translated, other, turns, maxTokens, choices, stream }) => {
    const channel = translated ? PROTOCOLS[(PROTOCOLS.indexOf(client) + other) % PROTOCOLS.length]! : client;
    return { client, channel, body: body(client, turns, maxTokens, choices, stream), params: client === 'generate-content' ? { model: 'm', stream } : {} };
  });

/** What the relay holds for a request, and the body its channel is sent. */
function relayed(m: ModelConfig, r: Request): { hold: bigint; sent: Record<string, unknown> } {
  const adapter = ADAPTERS[r.client];
  const info = adapter.inspect(r.body, r.params);
  if ('invalid' in info) throw new Error(`generated an invalid request: ${info.invalid}`);
  if (r.channel === r.client) {
    return { hold: holdAmount(pricingOf(m), callEstimate(m, [info]), 0), sent: adapter.upstream(r.body, info, 'up').body as Record<string, unknown> };
  }
  const route = { channel: { id: 'c', protocol: r.channel, base_url: 'http://127.0.0.1', api_key: '', group: 'default', priority: 0, weight: 1, models: ['m'], tools: [] }, upstreamModel: 'up', via: r.channel };
  const translation = translationFor(decodeCall(adapter, r.body, r.params, info, 0), adapter, route, m);
  const hold = holdAmount(pricingOf(m), callEstimate(m, [translation.asked ?? info]), 0);
  return { hold, sent: translation.adapter.upstream(r.body, info, 'up').body as Record<string, unknown> };
}

// ---------------------------------------------------------------------------
// What the channel may bill, read off the body it was sent (the spec's rules, not the adapters)
// ---------------------------------------------------------------------------

interface Limits {
  readonly prompt: number;
  readonly output: number;
}

function limitsOf(m: ModelConfig, protocol: ChatProtocol, sent: Record<string, unknown>): Limits {
  const config = (sent.generationConfig ?? {}) as Record<string, unknown>;
  const explicit = { 'chat-completions': sent.max_completion_tokens ?? sent.max_tokens, messages: sent.max_tokens, responses: sent.max_output_tokens, 'generate-content': config.maxOutputTokens }[protocol];
  const perAnswer = typeof explicit === 'number' ? explicit : Math.min(m.default_max_tokens ?? MAX_ESTIMATED_OUTPUT, MAX_ESTIMATED_OUTPUT);
  const answers = protocol === 'chat-completions' ? ((sent.n as number | undefined) ?? 1) : protocol === 'generate-content' ? ((config.candidateCount as number | undefined) ?? 1) : 1;
  return { prompt: promptTokens(protocol, sent), output: perAnswer * answers };
}

/** A usage the channel may report: its own prompt count (part of it cached), output up to the limit. */
const usageWithin = (limits: Limits): fc.Arbitrary<Usage> =>
  fc
    .record({
      cached: fc.integer({ min: 0, max: limits.prompt }),
      output: fc.oneof(fc.constant(limits.output), fc.integer({ min: 0, max: limits.output })),
      reasoningShare: fc.integer({ min: 0, max: 100 }),
    })
    .map(({ cached, output, reasoningShare }) => ({
      promptTokens: limits.prompt,
      cachedTokens: cached,
      cacheWriteTokens: 0,
      outputTokens: output,
      reasoningTokens: Math.floor((output * reasoningShare) / 100),
    }));

/** A model, a request, its hold, and a usage its channel may report. */
const call = fc.tuple(model, request).chain(([m, r]) => {
  const { hold, sent } = relayed(m, r);
  return usageWithin(limitsOf(m, r.channel, sent)).map((usage) => ({ m, r, hold, settled: costOf(pricingOf(m), usage, 0), usage }));
});

describe('the chat pre-charge', () => {
  it('covers every settlement the request allows its channel to bill, whatever the number of answers', () => {
    fc.assert(
      fc.property(call, ({ hold, settled }) => {
        expect(settled).toBeLessThanOrEqual(hold);
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps a key within its spend cap whatever calls it makes, in any order of settlement', () => {
    const CAP_KEY = 'key-1';
    const NOW = 1_700_000_000;
    const sequence = fc.record({
      cap: fc.bigInt({ min: 0n, max: 50_000_000_000n }),
      calls: fc.array(fc.tuple(call, fc.nat()), { minLength: 1, maxLength: 12 }),
    });
    fc.assert(
      fc.property(sequence, ({ cap, calls }) => {
        let state: WalletState = initialWalletState;
        const run = (command: WalletCommand) => {
          const decision = decide(command, state);
          if (decision.ok) for (const event of decision.events) state = evolve(state, event);
          return decision.ok;
        };
        run({ type: 'OpenAccount', accountId: 'acc', name: 'prop', trialGrant: SIGNUP_GRANT, now: NOW });
        run({ type: 'TopUp', topupId: 't', amount: 100_000n * 1_000_000_000n, reference: 'r', now: NOW });
        const open: { holdId: string; settled: bigint }[] = [];
        let largestHold = 0n;
        const check = () => {
          const spent = state.keys.get(CAP_KEY)?.spent ?? 0n;
          expect(spent).toBeLessThanOrEqual(cap + largestHold);
          expect(spent).toBeLessThanOrEqual(cap);
          expect(available(state)).toBeGreaterThanOrEqual(0n);
        };
        calls.forEach(([c, pick], i) => {
          const holdId = `h${i}`;
          if (run({ type: 'Reserve', holdId, amount: c.hold, keyId: CAP_KEY, spendCap: cap, purpose: 'chat', expiresAt: NOW + 300, now: NOW })) {
            open.push({ holdId, settled: c.settled });
            if (c.hold > largestHold) largestHold = c.hold;
          }
          // Calls run concurrently: any open one may end next.
          if (open.length > 0 && pick % 3 !== 0) {
            const [ending] = open.splice(pick % open.length, 1);
            run({ type: 'Settle', holdId: ending!.holdId, amount: ending!.settled, now: NOW });
          }
          check();
        });
        for (const ending of open) run({ type: 'Settle', holdId: ending.holdId, amount: ending.settled, now: NOW });
        check();
      }),
      { numRuns: Math.max(1, Math.floor(RUNS / 10)) },
    );
  });
});
