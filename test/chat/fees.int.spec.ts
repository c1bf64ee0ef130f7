/**
 * Issue 23, findings 6-8: the fees the spec names. Built-in tool calls add a fixed per-call fee from
 * the upstream's count (Billing 3), shown on the call-log row and in the settlement event (the
 * receipt); a promotional discount applies at settlement while listed prices stay undiscounted
 * (Billing 5); the hold of a model that charges cache writes at 1.25 × input holds that worst case
 * (Billing 1).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChatProtocol } from '../../src/config/schema';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { ANSWERS, callGateway, estimatedPrompt, MODELS, ScriptedUpstream, scriptedConfig } from './scripted-upstream';
import { expectedCost, PRICES } from './support';

const FEE = { web_search: '0.01' };
const FEE_UNITS = 10_000_000n;
const START = Math.floor(Date.now() / 1000);

let upstream: ScriptedUpstream;
let t: TestGateway;
let base: string;
let clock = START;

beforeAll(async () => {
  upstream = await ScriptedUpstream.start();
  const config = scriptedConfig(
    upstream.url,
    {
      messages: { price: { ...PRICES, tool_call_fee: FEE }, cache_write_multiplier: '1.25' },
      responses: { price: { ...PRICES, tool_call_fee: FEE } },
      'chat-completions': { discount: { multiplier: '0.5' } },
      'generate-content': { owned_by: 'promo-vendor' },
    },
    { discounts: [{ owned_by: 'promo-vendor', multiplier: '0.8', from: START, until: START + 3600 }] },
  );
  t = await startTestGateway({ config, now: () => clock, chatTimeoutMs: 5000 });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await t.close();
  await upstream.close();
});
beforeEach(() => {
  clock = START;
});

interface Settled {
  hold_amount: string;
  captured: string;
  call: Record<string, unknown>;
}

async function lastSettlement(accountId: string): Promise<Settled> {
  await t.gateway.ledger.idle();
  await expect.poll(async () => (await t.gateway.ledger.wallet(accountId)).held, { timeout: 5000 }).toBe(0n);
  const events = await t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.filter((e) => e.type === 'HoldSettled').at(-1)!.data as Settled;
}

async function row(accountId: string): Promise<Record<string, unknown>> {
  await t.gateway.runner.catchUpToHead();
  return ((await t.admin('GET', `/accounts/${accountId}/logs`)).json() as { data: Array<Record<string, unknown>> }).data[0]!;
}

describe('built-in tool fees from the upstream count', () => {
  it('messages: usage.server_tool_use.web_search_requests, with @anthropic-ai/sdk, on the row, in the CSV and in the receipt', async () => {
    const { accountId, key } = await t.accountWithKey();
    upstream.answer(ANSWERS.messages.body({ input_tokens: 40, output_tokens: 12, server_tool_use: { web_search_requests: 2 } }));
    const anthropic = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
    const answer = await anthropic.messages.create({
      model: MODELS.messages,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'search the web' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
    });
    expect(answer.usage.server_tool_use?.web_search_requests).toBe(2);

    const settled = await lastSettlement(accountId);
    expect(BigInt(settled.captured)).toBe(expectedCost(40, 0, 12) + 2n * FEE_UNITS);
    expect(settled.call).toMatchObject({ unit_count: 2, unit_type: 'web_search_call', tool_fee: String(2n * FEE_UNITS) });
    expect(await row(accountId)).toMatchObject({ unit_count: 2, unit_type: 'web_search_call', tool_fee_usd: '0.02', input_tokens: 40, output_tokens: 12 });
    const csv = (await t.admin('GET', `/accounts/${accountId}/logs.csv`)).body;
    expect(csv.split('\n')[1]).toContain(',2,web_search_call,');
    // The admin ledger view shows the settlement event as stored: the receipt.
    const ledger = (await t.admin('GET', `/accounts/${accountId}/ledger`)).json() as { data: Array<{ type: string; data: Settled }> };
    expect(ledger.data.find((e) => e.type === 'HoldSettled')!.data.call).toMatchObject({ tool_fee: '20000000', unit_count: 2 });
  });

  it('messages stream: the cumulative count in message_delta', async () => {
    const { accountId, key } = await t.accountWithKey();
    upstream.answer(ANSWERS.messages.stream({ input_tokens: 40, output_tokens: 12, server_tool_use: { web_search_requests: 3 } }));
    // The request names the search tool: its first search is held, and three are within the capture bound (issue 31).
    await (await callGateway(base, key, 'messages', true, { fields: { tools: [{ type: 'web_search_20250305', name: 'web_search' }] } })).text();
    const settled = await lastSettlement(accountId);
    expect(BigInt(settled.captured)).toBe(expectedCost(40, 0, 12) + 3n * FEE_UNITS);
    expect(settled.call).toMatchObject({ unit_count: 3, unit_type: 'web_search_call', status: 'success' });
  });

  it('responses: the web_search_call items of the output, answered and streamed, with the openai SDK', async () => {
    const { accountId, key } = await t.accountWithKey();
    const searches = [1, 2, 3].map((n) => ({ type: 'web_search_call', id: `ws_${n}`, status: 'completed', action: { type: 'search', query: 'q' } }));
    const message = { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'found', annotations: [] }] };
    upstream.answer(ANSWERS.responses.body({ input_tokens: 30, output_tokens: 10 }, { output: [...searches, message] }));
    const openai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
    const response = await openai.responses.create({ model: MODELS.responses, input: 'search', tools: [{ type: 'web_search' }] });
    expect(response.output.filter((i) => i.type === 'web_search_call')).toHaveLength(3);
    let settled = await lastSettlement(accountId);
    expect(BigInt(settled.captured)).toBe(expectedCost(30, 0, 10) + 3n * FEE_UNITS);

    // Streamed: the final response lists no output here, so the items done along the way count.
    const full = ANSWERS.responses.stream({ input_tokens: 30, output_tokens: 10 }).body;
    const done = searches.slice(0, 2).map((item, i) => `event: response.output_item.done\ndata: ${JSON.stringify({ type: 'response.output_item.done', sequence_number: 10 + i, output_index: i, item })}\n\n`);
    const at = full.indexOf('event: response.completed');
    upstream.answer({ contentType: 'text/event-stream', body: full.slice(0, at) + done.join('') + full.slice(at) });
    await (await callGateway(base, key, 'responses', true, { fields: { tools: [{ type: 'web_search' }] } })).text();
    settled = await lastSettlement(accountId);
    expect(BigInt(settled.captured)).toBe(expectedCost(30, 0, 10) + 2n * FEE_UNITS);
    expect(settled.call).toMatchObject({ unit_count: 2, unit_type: 'web_search_call', tool_fee: String(2n * FEE_UNITS) });
  });
});

describe('promotional discounts', () => {
  it("bill a model's own discount at settlement; the listed price stays as it was", async () => {
    const { accountId, key } = await t.accountWithKey();
    upstream.answer(ANSWERS['chat-completions'].body({ prompt_tokens: 1001, completion_tokens: 7 }));
    // A hold large enough that 1001 prompt tokens for "hi" stay within its capture bound (4 × the hold, issue 31).
    await (await callGateway(base, key, 'chat-completions', false, { fields: { max_tokens: 1000 } })).text();
    const settled = await lastSettlement(accountId);
    // (1001 × 1000 + 7 × 2000) × 0.5 = 507,500 nano-dollars, one rounding.
    expect(BigInt(settled.captured)).toBe(507_500n);
    expect(settled.call.discount).toBe('0.5');

    const models = (await (await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: Array<Record<string, unknown>> };
    expect(models.data.find((m) => m.id === MODELS['chat-completions'])).toEqual({ id: MODELS['chat-completions'], object: 'model', created: 0, owned_by: 'test' });
    const listed = (await (await fetch(`${base}/api/v1/models/public?id=${MODELS['chat-completions']}`)).json()) as { models: Array<Record<string, unknown>> };
    expect(listed.models[0]).toMatchObject({ price: PRICES, discounts: [{ multiplier: '0.5' }] });
  });

  it("bill a family's discount inside its window only, by the call's submission time", async () => {
    const { accountId, key } = await t.accountWithKey();
    const price = (prompt: number, output: number) => BigInt(prompt) * 1000n + BigInt(output) * 2000n;
    clock = START + 10;
    upstream.answer(ANSWERS['generate-content'].body({ promptTokenCount: 333, candidatesTokenCount: 3 }));
    await (await callGateway(base, key, 'generate-content', false)).text();
    let settled = await lastSettlement(accountId);
    // 339,000 × 0.8 = 271,200 nano-dollars.
    expect(BigInt(settled.captured)).toBe((price(333, 3) * 8n) / 10n);
    expect(settled.call.discount).toBe('0.8');

    clock = START + 3600;
    upstream.answer(ANSWERS['generate-content'].body({ promptTokenCount: 333, candidatesTokenCount: 3 }));
    await (await callGateway(base, key, 'generate-content', false)).text();
    settled = await lastSettlement(accountId);
    expect(BigInt(settled.captured)).toBe(price(333, 3));
    expect(settled.call.discount).toBeUndefined();

    const listed = (await (await fetch(`${base}/api/v1/models/public?id=${MODELS['generate-content']}`)).json()) as { models: Array<Record<string, unknown>> };
    expect(listed.models[0]).toMatchObject({ price: PRICES, discounts: [{ multiplier: '0.8', from: START, until: START + 3600 }] });
  });
});

describe('the hold of a cache-write family', () => {
  it('holds the whole estimated prompt at 1.25 × the input price', async () => {
    const { accountId, key } = await t.accountWithKey();
    const messages = [{ role: 'user', content: 'x'.repeat(4000) }];
    upstream.answer(ANSWERS.messages.body({ input_tokens: 10, output_tokens: 5 }));
    await (await callGateway(base, key, 'messages', false, { messages })).text();
    const prompt = estimatedPrompt('messages' as ChatProtocol, messages);
    const settled = await lastSettlement(accountId);
    expect(BigInt(settled.hold_amount)).toBe(expectedCost(prompt, 0, 100, prompt, 1.25));
    expect(BigInt(settled.hold_amount)).toBeGreaterThan(expectedCost(prompt, 0, 100));
  });
});
