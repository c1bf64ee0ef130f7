/**
 * Issue 36, item 2: Claude Code's prompt-cache economics. Anthropic prices 5-minute cache writes at 1.25 ×
 * the input price and 1-hour writes at 2 ×, and reports them apart (`usage.cache_creation`); the gateway
 * bills each at its own multiplier, holds a request that asks for 1-hour entries at the 1-hour price, and
 * keeps the split in the call log. The simulator writes half the prompt, for 1 hour when the system block's
 * cache_control says `ttl: '1h'` (src/simulator/README.md).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { cachedTokensFor, countTokens, promptTokens } from '../../src/simulator';
import { expectedCost, startChatHarness, type ChatHarness } from './support';

let h: ChatHarness;
beforeAll(async () => {
  h = await startChatHarness({ chatTimeoutMs: 3000 });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const START = parseUsd('40.44');

async function client() {
  const { accountId, key } = await h.t.accountWithKey();
  return { accountId, anthropic: new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 }) };
}

const wallet = (accountId: string) => h.t.gateway.ledger.wallet(accountId);
const balance = async (accountId: string) => (await wallet(accountId)).balance;
const tokens = (text: string) => countTokens(text);

interface SettledCall {
  captured: string;
  hold_amount: string;
  call: { request_id: string; input_tokens: number; cached_tokens: number; cache_write_tokens?: number; cache_write_1h_tokens?: number };
}

async function settledCalls(accountId: string): Promise<SettledCall[]> {
  await h.t.gateway.ledger.idle();
  const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.filter((e) => e.type === 'HoldSettled').map((e) => e.data as SettledCall);
}

/** Waits for a stream's settlement (it happens after the last byte was written). */
async function lastSettled(accountId: string): Promise<SettledCall> {
  await expect.poll(async () => (await settledCalls(accountId)).length).toBe(1);
  await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
  return (await settledCalls(accountId)).at(-1)!;
}

describe('cache writes by lifetime with @anthropic-ai/sdk', () => {
  it('bills a 1-hour cache write at 2x the input price from the upstream split, holding the prompt at that price (issue 36, item 2)', async () => {
    const { accountId, anthropic } = await client();
    // Claude Code's shape: the system prompt marked for a 1-hour cache entry.
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You are a coding agent', cache_control: { type: 'ephemeral', ttl: '1h' } }];
    const messages = [{ role: 'user' as const, content: 'Hello there' }];
    const first = await anthropic.messages.create({ model: 'msg-model', max_tokens: 200, system, messages });
    const prompt = promptTokens('messages', { system, messages });
    const half = cachedTokensFor(prompt);
    expect(half).toBeGreaterThan(0);
    expect(first.usage).toMatchObject({ input_tokens: prompt - half, cache_creation_input_tokens: half, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: half } });
    const output = tokens('Echo: Hello there');

    // msg-model: $1 input, cache_write_multiplier 1.25 and the default 2 for 1-hour writes.
    const settled = (await settledCalls(accountId)).at(-1)!;
    expect(settled.call).toMatchObject({ input_tokens: prompt, cached_tokens: 0, cache_write_tokens: half, cache_write_1h_tokens: half });
    const cost = expectedCost(prompt, 0, output, half, 2);
    expect(BigInt(settled.captured)).toBe(cost);
    expect(await balance(accountId)).toBe(START - cost);
    // The hold: the whole estimated prompt (its JSON bytes / 4) written for 1 hour, plus the output cap.
    const estimated = Math.ceil(Buffer.byteLength(JSON.stringify({ system, messages })) / 4);
    expect(BigInt(settled.hold_amount)).toBe(expectedCost(estimated, 0, 200, estimated, 2));

    // The same prompt with a 5-minute entry (a new system text, so the simulator writes again): 1.25x, held at 1.25x.
    const fiveMinutes: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You are a coding agent too', cache_control: { type: 'ephemeral' } }];
    const second = await anthropic.messages.create({ model: 'msg-model', max_tokens: 200, system: fiveMinutes, messages });
    const prompt2 = promptTokens('messages', { system: fiveMinutes, messages });
    const half2 = cachedTokensFor(prompt2);
    expect(second.usage).toMatchObject({ cache_creation: { ephemeral_5m_input_tokens: half2, ephemeral_1h_input_tokens: 0 } });
    const settled2 = (await settledCalls(accountId)).at(-1)!;
    expect(BigInt(settled2.captured)).toBe(expectedCost(prompt2, 0, output, half2, 1.25));
    const estimated2 = Math.ceil(Buffer.byteLength(JSON.stringify({ system: fiveMinutes, messages })) / 4);
    expect(BigInt(settled2.hold_amount)).toBe(expectedCost(estimated2, 0, 200, estimated2, 1.25));

    // The call log keeps the split for receipts and re-rates (not in the CSV: the spec fixes its columns).
    await h.t.gateway.runner.catchUpToHead();
    const rows = ((await (await h.t.admin('GET', `/accounts/${accountId}/logs`)).json()) as { data: Record<string, unknown>[] }).data;
    // Both calls may share a second: the rows are matched by their request ids.
    const byRequest = new Map(rows.map((r) => [r.request_id, [r.cache_write_tokens, r.cache_write_1h_tokens]]));
    expect(byRequest.get(settled.call.request_id)).toEqual([half, half]);
    expect(byRequest.get(settled2.call.request_id)).toEqual([half2, 0]);
  });

  it('bills a streamed 1-hour cache write from message_start\'s split', async () => {
    const { accountId, anthropic } = await client();
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'A streaming coding agent', cache_control: { type: 'ephemeral', ttl: '1h' } }];
    const messages = [{ role: 'user' as const, content: 'stream please' }];
    const final = await anthropic.messages.stream({ model: 'msg-model', max_tokens: 100, system, messages }).finalMessage();
    const prompt = promptTokens('messages', { system, messages });
    const half = cachedTokensFor(prompt);
    expect(final.usage.cache_creation).toMatchObject({ ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: half });
    const settled = await lastSettled(accountId);
    expect(settled.call).toMatchObject({ cache_write_tokens: half, cache_write_1h_tokens: half });
    expect(BigInt(settled.captured)).toBe(expectedCost(prompt, 0, tokens('Echo: stream please'), half, 2));
  });
});
