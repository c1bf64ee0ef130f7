/**
 * Issue 31, item 2: a chat call's capture is bounded by its hold, whatever its upstream answers. The
 * relay's billing path (estimate → hold → clamp → price → bound) on any request and any usage, and
 * the wallet: a key with a spend cap never passes it by more than the bound allows.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbitraryTextModel } from './text-model.arbitrary';
import type { ModelConfig } from '../config/schema';
import { SIGNUP_GRANT, decide, type WalletCommand } from '../commands/wallet/decider';
import { evolve, initialWalletState, type WalletState } from '../commands/wallet/state';
import type { Usage } from './contract';
import { boundedCapture, CAPTURE_FACTOR, clampUsage, deliveredChars, feeToolsNamed, requestShape, usageCeiling } from './capture';
import { builtinToolsHold, chargeOf, estimateUsage, holdAmount, pricingOf } from './pricing';
import { MAX_REPORTED_TOKENS, MAX_REPORTED_TOOL_CALLS } from './usage';

const AT = 1_700_000_000;

const model = arbitraryTextModel(200_000);

/** A chat-completions body: text, images, tools of the client's or the provider's. */
const request = fc.record({
  messages: fc.array(
    fc.oneof(
      fc.record({ role: fc.constant('user'), content: fc.string({ maxLength: 200 }) }),
      fc.record({ role: fc.constant('user'), content: fc.constant([{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }]) }),
    ),
    { minLength: 1, maxLength: 4 },
  ),
  maxTokens: fc.option(fc.integer({ min: 1, max: 200_000 }), { nil: null }),
  choices: fc.integer({ min: 1, max: 10 }),
  tools: fc.constantFrom([], [{ type: 'function', function: { name: 'f' } }], [{ type: 'web_search' }], [{ type: 'web_search_20250305', name: 'web_search' }]),
});

const count = fc.oneof(fc.nat({ max: 1000 }), fc.nat({ max: MAX_REPORTED_TOKENS }));
const usage = fc.record({ promptTokens: count, cachedTokens: count, cacheWriteTokens: count, outputTokens: count, reasoningTokens: count, searches: fc.nat({ max: MAX_REPORTED_TOOL_CALLS }) }).map(
  ({ searches, ...u }): Usage => ({ ...u, ...(searches > 0 ? { toolCalls: { web_search: searches } } : {}) }),
);

/** What the relay does with a request and whatever its upstream reports (a single-model chain). */
function billed(m: ModelConfig, r: { messages: readonly unknown[]; maxTokens: number | null; choices: number; tools: readonly unknown[] }, reported: Usage) {
  const body = { model: 'm', messages: r.messages, ...(r.maxTokens !== null ? { max_tokens: r.maxTokens } : {}), n: r.choices, tools: r.tools };
  const pricing = pricingOf(m);
  const estimate = estimateUsage(m, r.messages, r.maxTokens, r.choices);
  const hold = holdAmount(pricing, estimate, AT) + builtinToolsHold(pricing, feeToolsNamed(body));
  const clamped = clampUsage(reported, usageCeiling(m, requestShape(body), r.maxTokens, r.choices, estimate.outputTokens));
  const charge = chargeOf(pricing, clamped, AT);
  return { hold, clamped, charge, ...boundedCapture(charge.amount, hold) };
}

describe('the capture of a chat call', () => {
  it('is at most CAPTURE_FACTOR × its hold for any reported usage; what is left out is the rest of the price', () => {
    fc.assert(
      fc.property(model, request, usage, (m, r, reported) => {
        const { hold, charge, captured, uncharged } = billed(m, r, reported);
        expect(captured).toBeLessThanOrEqual(hold * CAPTURE_FACTOR);
        expect(captured + uncharged).toBe(charge.amount);
        expect(uncharged >= 0n).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('bills output at most max_tokens × choices (else the held output), and input at most the request can contain', () => {
    fc.assert(
      fc.property(model, request, usage, (m, r, reported) => {
        const { clamped } = billed(m, r, reported);
        const heldOutput = estimateUsage(m, r.messages, r.maxTokens, r.choices).outputTokens;
        expect(clamped.outputTokens).toBeLessThanOrEqual(r.maxTokens === null ? heldOutput : r.maxTokens * r.choices);
        if (clamped !== reported) expect(clamped.reasoningTokens).toBeLessThanOrEqual(clamped.outputTokens);
        if (m.context_window !== undefined) expect(clamped.promptTokens).toBeLessThanOrEqual(m.context_window);
        // Believed as reported when within the bounds: a well-behaved upstream is billed exactly.
        if (clamped.promptTokens === reported.promptTokens && clamped.outputTokens === reported.outputTokens) expect(clamped).toBe(reported);
      }),
      { numRuns: 1000 },
    );
  });

  it('never lets a key pass its spend cap by more than (CAPTURE_FACTOR − 1) × its largest hold', () => {
    const calls = fc.array(fc.record({ m: model, r: request, reported: usage }), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 5_000_000_000n }), calls, (cap, sequence) => {
        let state: WalletState = initialWalletState;
        const run = (command: WalletCommand) => {
          const decision = decide(command, state);
          if (decision.ok) for (const event of decision.events) state = evolve(state, event);
          return decision.ok;
        };
        run({ type: 'OpenAccount', accountId: 'a', name: 'a', trialGrant: SIGNUP_GRANT, now: AT });
        run({ type: 'TopUp', topupId: 't', amount: 10n ** 15n, reference: 'r', now: AT });
        let largest = 0n;
        sequence.forEach(({ m, r, reported }, i) => {
          const { hold, captured } = billed(m, r, reported);
          if (!run({ type: 'Reserve', holdId: `h${i}`, amount: hold, keyId: 'k', spendCap: cap, purpose: 'chat', expiresAt: AT + 60, now: AT })) return;
          if (hold > largest) largest = hold;
          expect(run({ type: 'Settle', holdId: `h${i}`, amount: captured, now: AT })).toBe(true);
        });
        const spent = state.keys.get('k')?.spent ?? 0n;
        expect(spent).toBeLessThanOrEqual(cap + (CAPTURE_FACTOR - 1n) * largest);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the delivered text of an answer', () => {
  it('counts the text, not the JSON around it', () => {
    const padding = 'x'.repeat(2000);
    expect(deliveredChars({ id: padding, choices: [{ message: { role: 'assistant', content: 'hello there' } }], system_fingerprint: padding })).toBe(11);
    expect(deliveredChars({ content: [{ type: 'text', text: 'hello there' }, { type: 'tool_use', id: padding, name: 'f', input: { a: 1 } }] })).toBe(11 + 7);
    expect(deliveredChars({ candidates: [{ content: { parts: [{ text: 'hello there' }] } }], usageMetadata: { promptTokenCount: 5 } })).toBe(11);
  });
});
