import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { verifyLedger } from '../../src/projections/verify';
import { chatConfig, expectedCost, startChatHarness, type ChatHarness } from '../chat/support';

// Re-rating (issue 23, item 7): past calls priced again, one adjustment per account, never a
// rewrite; the dry run changes nothing, the apply is idempotent on its reference.

let h: ChatHarness;
beforeAll(async () => {
  h = await startChatHarness();
});
afterAll(async () => h?.close());

const admin = (method: 'GET' | 'POST', path: string, body?: unknown) => h.t.admin(method, path, body);

async function chat(key: string, model: string, content: string) {
  const client = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
  const answer = await client.chat.completions.create({ model, messages: [{ role: 'user', content }], max_tokens: 50 });
  return answer.usage!;
}

async function balance(accountId: string) {
  await h.t.gateway.runner.catchUpToHead();
  return parseUsd((await admin('GET', `/accounts/${accountId}`)).json().balance_usd);
}

/** $1 / $0.50 / $2 per 1M tokens (PRICES) becomes $3 / $1 / $5. */
const NEW_PRICE = { input: '3.00', cached_input: '1.00', output: '5.00' };
const newCost = (prompt: number, output: number) => BigInt(prompt) * 3000n + BigInt(output) * 5000n;
const sorted = (values: bigint[]) => [...values].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));

describe('gateway ledger rerate (POST /admin/v1/rerates)', () => {
  it('lists every affected call as a dry run, then applies one idempotent adjustment per account', async () => {
    const a = await h.t.accountWithKey();
    const b = await h.t.accountWithKey();
    const usages = [await chat(a.key, 'chat-model', 'hello there'), await chat(a.key, 'chat-model', 'and again'), await chat(b.key, 'chat-model', 'hi')];
    // Another model is not re-rated.
    await chat(a.key, 'resp-model', 'not this one').catch(() => undefined);
    const before = { a: await balance(a.accountId), b: await balance(b.accountId) };
    const charged = usages.map((u) => expectedCost(u.prompt_tokens, 0, u.completion_tokens));
    const repriced = usages.map((u) => newCost(u.prompt_tokens, u.completion_tokens));

    const body = { model: 'chat-model-2024', from: 0, to: '2100-01-01', price: NEW_PRICE };
    const dry = await admin('POST', '/rerates', body);
    expect(dry.statusCode).toBe(200);
    const plan = dry.json();
    expect(plan.model).toBe('chat-model');
    expect(plan.applied).toBe(false);
    expect(plan.calls).toHaveLength(3);
    const costs = plan.calls.map((c: { old_cost_usd: string; new_cost_usd: string; difference_usd: string }) => [
      parseUsd(c.old_cost_usd),
      parseUsd(c.new_cost_usd),
      parseUsd(c.difference_usd),
    ]);
    expect(sorted(costs.map((c: bigint[]) => c[0]))).toEqual(sorted(charged));
    expect(sorted(costs.map((c: bigint[]) => c[1]))).toEqual(sorted(repriced));
    for (const [oldCost, next, difference] of costs) expect(difference).toBe(next - oldCost);
    const diffA = repriced[0]! + repriced[1]! - charged[0]! - charged[1]!;
    const diffB = repriced[2]! - charged[2]!;
    const accountLine = (id: string) => plan.accounts.find((x: { account_id: string }) => x.account_id === id);
    expect(parseUsd(accountLine(a.accountId).difference_usd)).toBe(diffA);
    expect(accountLine(a.accountId).calls).toBe(2);
    expect(parseUsd(accountLine(b.accountId).difference_usd)).toBe(diffB);
    // A dry run changes nothing.
    expect(await balance(a.accountId)).toBe(before.a);

    expect((await admin('POST', '/rerates', { ...body, apply: true })).statusCode).toBe(400); // no reference
    const applied = await admin('POST', '/rerates', { ...body, apply: true, reference: 'price-fix-1', reason: 'input price was wrong' });
    expect(applied.statusCode).toBe(200);
    expect(applied.json().accounts.map((x: { outcome: string }) => x.outcome)).toEqual(['applied', 'applied']);
    expect(await balance(a.accountId)).toBe(before.a - diffA);
    expect(await balance(b.accountId)).toBe(before.b - diffB);

    // The receipt: one adjustment entry in the account's ledger, the rows show what changed.
    const events = (await admin('GET', `/accounts/${a.accountId}/ledger`)).json();
    const adjustments = (events.events ?? events.data ?? events).filter((e: { type: string }) => e.type === 'WalletAdjusted');
    expect(adjustments).toHaveLength(1);
    const logs = (await admin('GET', `/accounts/${a.accountId}/logs?model=chat-model`)).json().data;
    expect(logs).toHaveLength(2);
    for (const row of logs) {
      expect(row.adjustment_reference).toBe('price-fix-1');
      expect(parseUsd(row.cost_usd) + parseUsd(row.adjustment_usd)).toBe(newCost(row.input_tokens, row.output_tokens));
    }
    // The export shows the adjustment on request; the spec's columns alone by default.
    expect((await admin('GET', `/accounts/${a.accountId}/logs.csv`)).body.split('\n')[0]).not.toContain('adjustment_usd');
    const csv = (await admin('GET', `/accounts/${a.accountId}/logs.csv?include=adjustments`)).body;
    expect(csv.split('\n')[0]).toMatch(/,result_expires_at,adjustment_usd,adjustment_reference$/);
    expect(csv).toContain(',price-fix-1');

    // The same reference again: nothing moves.
    const again = await admin('POST', '/rerates', { ...body, apply: true, reference: 'price-fix-1' });
    expect(again.statusCode).toBe(200);
    expect(await balance(a.accountId)).toBe(before.a - diffA);
    expect(await balance(b.accountId)).toBe(before.b - diffB);

    // Re-rates compose: a second one starts from the adjusted costs.
    const back = (await admin('POST', '/rerates', { ...body, price: { input: '1.00', cached_input: '0.50', output: '2.00' } })).json();
    expect(sorted(back.accounts.map((x: { difference_usd: string }) => parseUsd(x.difference_usd)))).toEqual(sorted([-diffA, -diffB]));

    expect(await verifyLedger(h.t.gateway.storage.store, h.t.gateway.storage.sql)).toEqual([]);
    // Rebuilt from the log, the projections come back the same.
    for (const name of ['accounts', 'ledger', 'call-log']) await h.t.gateway.runner.rebuild(name);
    expect(await verifyLedger(h.t.gateway.storage.store, h.t.gateway.storage.sql)).toEqual([]);
    const rebuilt = (await admin('GET', `/accounts/${a.accountId}/logs?model=chat-model`)).json().data;
    expect(rebuilt.map((r: { adjustment_usd: string }) => r.adjustment_usd).sort()).toEqual(logs.map((r: { adjustment_usd: string }) => r.adjustment_usd).sort());
  });

  it('re-prices 1-hour cache writes at twice the new input price, from the split the call log kept (issue 36, item 2)', async () => {
    const a = await h.t.accountWithKey();
    const anthropic = new Anthropic({ apiKey: a.key, baseURL: h.baseUrl, maxRetries: 0 });
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'A re-rated agent', cache_control: { type: 'ephemeral', ttl: '1h' } }];
    const answer = await anthropic.messages.create({ model: 'msg-model', max_tokens: 50, system, messages: [{ role: 'user', content: 'hi' }] });
    const written = answer.usage.cache_creation_input_tokens!;
    expect(written).toBeGreaterThan(0);
    expect(answer.usage.cache_creation?.ephemeral_1h_input_tokens).toBe(written);
    const prompt = answer.usage.input_tokens + written;
    const output = answer.usage.output_tokens;
    // msg-model: $1 input, 1-hour writes at the default 2 × input.
    const charged = expectedCost(prompt, 0, output, written, 2);
    // Rebuilt (the COPY path), the call log still has the split.
    await h.t.gateway.runner.catchUpToHead();
    await h.t.gateway.runner.rebuild('call-log');

    const plan = (await admin('POST', '/rerates', { model: 'msg-model', from: 0, to: '2100-01-01', price: NEW_PRICE })).json();
    expect(plan.calls).toHaveLength(1);
    expect(parseUsd(plan.calls[0].old_cost_usd)).toBe(charged);
    // $3 input: the unwritten prompt at 3000 nano-dollars a token, the 1-hour writes at 6000, output at 5000
    // (priced as 5-minute writes they would be 3750 a token).
    expect(parseUsd(plan.calls[0].new_cost_usd)).toBe(BigInt(prompt - written) * 3000n + BigInt(written) * 6000n + BigInt(output) * 5000n);
  });

  it('refuses what it cannot price', async () => {
    expect((await admin('POST', '/rerates', { model: 'nope', from: 0, to: 10, price: NEW_PRICE })).statusCode).toBe(404);
    expect((await admin('POST', '/rerates', { model: 'chat-model', from: 10, to: 5, price: NEW_PRICE })).statusCode).toBe(400);
    expect((await admin('POST', '/rerates', { model: 'chat-model', from: 0, to: 10, price: { input: 0.5 } })).statusCode).toBe(400);
    expect((await admin('POST', '/rerates', { model: 'chat-model', from: 'yesterday', to: 10, price: NEW_PRICE })).statusCode).toBe(400);
  });
});

void chatConfig;
