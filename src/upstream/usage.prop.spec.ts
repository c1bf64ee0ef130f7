/**
 * Property: whatever usage block (or body, or stream frame) an upstream sends, each protocol's adapter
 * gives usage the ledger can bill and read back. The report is absent, invalid, or non-negative safe
 * integers within the ceilings; the settlement the relay builds from it (the report, else the
 * interrupted-stream estimate) prices without throwing, and its HoldSettled event survives the event
 * log's own round trip (JSON, then the read codec). Per protocol: FC_RUNS / 4 answers, FC_RUNS / 4
 * streams and FC_RUNS / 10 arbitrary bodies (FC_RUNS defaults to 10,000).
 */
import fc from 'fast-check';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { decodeEvent } from '../events/catalog';
import { encodeJson } from '../events/store/json';
import { callRecord } from '../http/billable-call';
import type { ModelConfig } from '../config/schema';
import type { ChatRequestInfo, ProtocolAdapter, Usage } from './contract';
import { chargeOf, estimateUsage, holdAmount, pricingOf, receiptOf, tokensFromChars } from './pricing';
import { chatCompletions } from './protocols/chat-completions';
import { generateContent } from './protocols/generate-content';
import { messages } from './protocols/messages';
import { responses } from './protocols/responses';
import { GatewayMetrics } from '../metrics/metrics';
import { checkUsage, isInvalidUsage, MAX_REPORTED_TOKENS, usageBounds, usageInvalidNote, type UsageReport } from './usage';

const RUNS = Number(process.env.FC_RUNS ?? 10_000);
const AT = 1_767_225_600;

const model = {
  id: 'm',
  owned_by: 'v',
  default_max_tokens: 4096,
  context_window: 200_000,
  price: { input: '3', cached_input: '0.3', output: '15', tool_call_fee: { web_search: '0.01' } },
  cache_write_multiplier: '1.25',
  long_context: { threshold_tokens: 1000, multiplier: '2' },
  discount: { multiplier: '0.8' },
} as ModelConfig;
const pricing = pricingOf(model);

/** Any number or value a vendor (or a broken proxy) might put where a count belongs. */
const count = fc.oneof(
  { weight: 4, arbitrary: fc.nat({ max: 100_000 }) },
  fc.integer({ min: -1_000_000, max: -1 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(1e20, 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, MAX_REPORTED_TOKENS, MAX_REPORTED_TOKENS + 1, -0, 0.5, 1.5),
  fc.string({ maxLength: 5 }),
  fc.constantFrom(null, true, false, '12', '1e20'),
  fc.array(fc.nat(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.nat(), { maxKeys: 2 }),
);

/** A usage block with some of a vendor's fields (nested ones too), or anything at all in its place. */
function block(fields: readonly string[]) {
  const record = fc.record(Object.fromEntries(fields.map((f) => [f, count])), { requiredKeys: [] }).map((flat) => {
    const nested: Record<string, unknown> = {};
    for (const [path, value] of Object.entries(flat)) {
      const [outer, inner] = path.split('.');
      if (inner === undefined) nested[outer!] = value;
      else nested[outer!] = { ...((nested[outer!] as object | undefined) ?? {}), [inner]: value };
    }
    return nested;
  });
  return fc.oneof({ weight: 6, arbitrary: record }, fc.jsonValue({ maxDepth: 2 }));
}

interface Wire {
  readonly adapter: ProtocolAdapter;
  readonly usage: fc.Arbitrary<unknown>;
  body(usage: unknown, extra: unknown): unknown;
  frames(usage: unknown, extra: unknown): string[];
}

const WIRES: Record<string, Wire> = {
  'chat-completions': {
    adapter: chatCompletions,
    usage: block(['prompt_tokens', 'completion_tokens', 'prompt_tokens_details.cached_tokens', 'completion_tokens_details.reasoning_tokens']),
    body: (usage, extra) => ({ choices: [{ message: { content: extra } }], usage }),
    frames: (usage, extra) => [JSON.stringify({ choices: [{ delta: { content: extra } }] }), JSON.stringify({ choices: [], usage }), '[DONE]'],
  },
  messages: {
    adapter: messages,
    usage: block([
      'input_tokens',
      'output_tokens',
      'cache_creation_input_tokens',
      'cache_read_input_tokens',
      'cache_creation.ephemeral_5m_input_tokens',
      'cache_creation.ephemeral_1h_input_tokens',
      'server_tool_use.web_search_requests',
    ]),
    body: (usage, extra) => ({ type: 'message', content: [{ type: 'text', text: extra }], usage }),
    frames: (usage, extra) => [
      JSON.stringify({ type: 'message_start', message: { usage } }),
      JSON.stringify({ type: 'content_block_delta', delta: { type: 'text_delta', text: extra } }),
      JSON.stringify({ type: 'message_delta', usage }),
      JSON.stringify({ type: 'message_stop' }),
    ],
  },
  responses: {
    adapter: responses,
    usage: block(['input_tokens', 'output_tokens', 'input_tokens_details.cached_tokens', 'output_tokens_details.reasoning_tokens']),
    body: (usage, extra) => ({ object: 'response', output: [{ type: 'web_search_call' }, extra], usage }),
    frames: (usage, extra) => [
      JSON.stringify({ type: 'response.output_text.delta', delta: extra }),
      JSON.stringify({ type: 'response.output_item.done', item: { type: 'web_search_call', id: 'ws' } }),
      JSON.stringify({ type: 'response.completed', response: { usage, output: extra } }),
    ],
  },
  'generate-content': {
    adapter: generateContent,
    usage: block(['promptTokenCount', 'candidatesTokenCount', 'cachedContentTokenCount', 'thoughtsTokenCount', 'toolUsePromptTokenCount']),
    body: (usage, extra) => ({ candidates: [{ content: { parts: [{ text: extra }] } }], usageMetadata: usage }),
    frames: (usage, extra) => [JSON.stringify({ candidates: [{ content: { parts: [{ text: extra }] }, finishReason: 'STOP' }], usageMetadata: usage })],
  },
};

const INFO: ChatRequestInfo = { model: 'm', stream: true, maxTokens: 1000, choices: 1, promptDocument: [{ role: 'user', content: 'hello' }], builtinTools: [] };
// The relay's own record builder runs on a request of a served app: its metrics are the app's.
const request = { id: 'req-1', caller: { keyId: 'key-1', key: { agentId: null } }, server: { gatewayMetrics: new GatewayMetrics() } } as unknown as FastifyRequest;

function expectBillable(report: UsageReport) {
  if (report === null || isInvalidUsage(report)) return;
  for (const value of [report.promptTokens, report.cachedTokens, report.cacheWriteTokens, report.cacheWrite1hTokens ?? 0, report.outputTokens, report.reasoningTokens, ...Object.values(report.toolCalls ?? {})]) {
    expect(Number.isSafeInteger(value)).toBe(true);
    expect(value).toBeGreaterThanOrEqual(0);
    expect(value).toBeLessThanOrEqual(MAX_REPORTED_TOKENS);
  }
}

/** What the relay does with a report: settle on it, or on the estimate; the event must read back. */
function settlesReadably(report: UsageReport, deliveredChars: number) {
  const checked = checkUsage(report, usageBounds(model, INFO));
  expectBillable(checked);
  const estimate = estimateUsage(model, INFO.promptDocument, INFO.maxTokens);
  const invalid = isInvalidUsage(checked) ? checked.invalid : null;
  const usage: Usage = checked !== null && !isInvalidUsage(checked) ? checked : { ...estimate, outputTokens: tokensFromChars(deliveredChars) };
  const charge = chargeOf(pricing, usage, AT);
  expect(charge.amount).toBeGreaterThanOrEqual(0n);
  const hold = holdAmount(pricing, estimate, AT);
  const facts = { request, endpoint: 'chat-completions', startedAt: 0, submittedAt: AT, model: 'm', attempts: 1, channelId: 'c' };
  const call = callRecord(facts, {
    status: 'success',
    input_tokens: usage.promptTokens,
    output_tokens: usage.outputTokens,
    cached_tokens: usage.cachedTokens,
    ...receiptOf(usage, charge),
    ...(invalid ? usageInvalidNote(invalid) : {}),
  });
  const data = { hold_id: 'h', hold_amount: hold, captured: charge.amount, released: hold > charge.amount ? hold - charge.amount : 0n, call, at: AT };
  const read = decodeEvent('HoldSettled', JSON.parse(encodeJson(data)));
  expect(read.data).toMatchObject({ captured: charge.amount, call: { input_tokens: usage.promptTokens, output_tokens: usage.outputTokens } });
}

describe('any usage block, through each protocol, settles into an event the log can read back', () => {
  for (const [protocol, wire] of Object.entries(WIRES)) {
    it(`${protocol}: complete answers`, () => {
      fc.assert(
        fc.property(wire.usage, fc.jsonValue({ maxDepth: 1 }), (usage, extra) => {
          settlesReadably(wire.adapter.usageOf(wire.body(usage, extra)), JSON.stringify(extra ?? null).length);
        }),
        { numRuns: Math.ceil(RUNS / 4) },
      );
    });

    it(`${protocol}: streams`, () => {
      fc.assert(
        fc.property(wire.usage, fc.jsonValue({ maxDepth: 1 }), (usage, extra) => {
          const observer = wire.adapter.observe(INFO, { stream: true });
          for (const data of wire.frames(usage, extra)) observer.onEvent({ event: undefined, data });
          settlesReadably(observer.usage(), observer.outputChars());
        }),
        { numRuns: Math.ceil(RUNS / 4) },
      );
    });

    it(`${protocol}: arbitrary bodies and frames`, () => {
      fc.assert(
        fc.property(fc.jsonValue({ maxDepth: 3 }), fc.array(fc.oneof(fc.json({ maxDepth: 3 }), fc.string()), { maxLength: 5 }), (body, frames) => {
          settlesReadably(wire.adapter.usageOf(body), 0);
          const observer = wire.adapter.observe(INFO, { stream: true });
          for (const data of frames) observer.onEvent({ event: undefined, data });
          settlesReadably(observer.usage(), observer.outputChars());
        }),
        { numRuns: Math.ceil(RUNS / 10) },
      );
    });
  }
});
