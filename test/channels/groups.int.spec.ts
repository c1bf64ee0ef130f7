import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { verifyLedger } from '../../src/projections/verify';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

const model = (id: string) => textModel(id);

/** `shared-model` in both groups (the premium channel first by priority), `vip-model` only in premium
 * (on both chat protocols), `basic-model` only in default. */
const config = (sim: Simulator): GatewayConfig =>
  ({
    models: ['shared-model', 'vip-model', 'basic-model'].map(model),
    channels: [
      simulatorChannel(sim, 'vip-shared', 'chat-completions', ['shared-model'], { group: 'premium' }),
      simulatorChannel(sim, 'gen-shared', 'chat-completions', ['shared-model'], { priority: 1 }),
      simulatorChannel(sim, 'vip-only', 'chat-completions', ['vip-model'], { group: 'premium' }),
      simulatorChannel(sim, 'vip-messages', 'messages', ['vip-model'], { group: 'premium' }),
      simulatorChannel(sim, 'gen-only', 'chat-completions', ['basic-model']),
    ],
    channel_health: { failures_before_cooldown: 3, cooldown_s: 30, max_cooldown_s: 1800, probe_interval_s: 0 },
  }) as GatewayConfig;

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startSimulatedGateway(config);
});
afterAll(() => h.close());

type ApiError = InstanceType<typeof OpenAI.APIError>;
const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
/** The channel that served a call: the simulator's last request's path prefix. */
async function servedBy(openai: OpenAI, modelId: string, stream = false): Promise<string> {
  if (stream) {
    const s = await openai.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'hi' }], stream: true });
    for await (const chunk of s) void chunk;
  } else {
    await openai.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'hi' }] });
  }
  return h.sim.requests.at(-1)!.path.split('/')[1]!;
}
const refused = (openai: OpenAI, modelId: string) =>
  openai.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'hi' }] }).then(
    () => null,
    (e: unknown) => e as ApiError,
  );
async function ok(method: 'GET' | 'POST' | 'PUT' | 'PATCH', path: string, body?: unknown) {
  const answer = await h.t.admin(method, path, body);
  expect(answer.statusCode, answer.body).toBeLessThan(300);
  return answer.json();
}

describe('channel groups: keys and accounts bound to a group are routed to its channels only', () => {
  it('an account and key bound to no group use every channel, as before groups', async () => {
    const { key } = await h.t.accountWithKey();
    const openai = client(key);
    expect(await servedBy(openai, 'shared-model')).toBe('vip-shared');
    expect(await servedBy(openai, 'vip-model')).toBe('vip-only');
    expect(await servedBy(openai, 'basic-model')).toBe('gen-only');
  });

  it("an account's group routes its keys' calls; a model with no channel in it is 503 no_channel_available in each protocol's shape", async () => {
    const account = await ok('POST', '/accounts', { name: 'basic', group: 'default' });
    expect(account.group).toBe('default');
    const key = await ok('POST', `/accounts/${account.id}/keys`, { name: 'k' });
    expect(key.group).toBeNull();
    const openai = client(key.key);
    expect(await servedBy(openai, 'shared-model')).toBe('gen-shared');
    expect(await servedBy(openai, 'shared-model', true)).toBe('gen-shared');
    const before = h.sim.requests.length;
    const error = await refused(openai, 'vip-model');
    expect(error?.status).toBe(503);
    expect(error?.error).toMatchObject({ code: 'no_channel_available' });
    expect(error?.message).toMatch(/channel group `default`/);
    // Anthropic's own error shape on /v1/messages.
    const anthropic = new Anthropic({ apiKey: key.key, baseURL: h.baseUrl, maxRetries: 0 });
    const denied = (await anthropic.messages.create({ model: 'vip-model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(denied.status).toBe(503);
    expect(denied.error).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: expect.stringMatching(/channel group `default`/) } });
    expect(h.sim.requests.length).toBe(before);
  });

  it("a key's own group wins over its account's; unbinding it (null) falls back to the account's; the account's change applies at once", async () => {
    const account = await ok('POST', '/accounts', { name: 'mixed', group: 'default' });
    const key = await ok('POST', `/accounts/${account.id}/keys`, { name: 'vip key', group: 'premium' });
    expect(key.group).toBe('premium');
    const openai = client(key.key);
    expect(await servedBy(openai, 'shared-model')).toBe('vip-shared');
    expect(await servedBy(openai, 'vip-model')).toBe('vip-only');
    expect((await refused(openai, 'basic-model'))?.status).toBe(503);

    const unbound = await ok('PATCH', `/keys/${key.id}`, { group: null });
    expect(unbound.group).toBeNull();
    expect(await servedBy(openai, 'shared-model')).toBe('gen-shared');
    expect((await refused(openai, 'vip-model'))?.status).toBe(503);

    expect((await ok('PUT', `/accounts/${account.id}/group`, { group: 'premium' })).group).toBe('premium');
    expect(await servedBy(openai, 'vip-model')).toBe('vip-only');
    expect((await ok('GET', `/accounts/${account.id}`)).group).toBe('premium');
    expect((await ok('PUT', `/accounts/${account.id}/group`, { group: null })).group).toBeNull();
    expect(await servedBy(openai, 'basic-model')).toBe('gen-only');
    expect((await ok('GET', `/accounts/${account.id}/keys`)).data[0].group).toBeNull();
  });

  it("an agent key routes as its enterprise account's group; a group set on the agent key itself is not looked at", async () => {
    const ent = (await ok('POST', '/accounts', { name: 'Acme', group: 'premium' })).id as string;
    const alice = (await ok('POST', '/accounts', { name: 'alice' })).id as string;
    await ok('PUT', `/accounts/${ent}/enterprise`, { allowed_models: ['shared-model'], default_model: 'shared-model' });
    await ok('PUT', `/accounts/${ent}/members/${alice}`, { role: 'admin' });
    const agent = await ok('POST', `/accounts/${ent}/agents`, { name: 'Desk', creator_account_id: alice, system_prompt: 'Be brief.', published: true });
    const agentKey = await ok('POST', `/agents/${agent.id}/keys`, { name: 'desk', issued_by: alice });
    const openai = client(agentKey.key);
    expect(await servedBy(openai, 'shared-model')).toBe('vip-shared');
    await ok('PATCH', `/keys/${agentKey.id}`, { group: 'default' });
    expect(await servedBy(openai, 'shared-model')).toBe('vip-shared');
    await ok('PUT', `/accounts/${ent}/group`, { group: 'default' });
    expect(await servedBy(openai, 'shared-model')).toBe('gen-shared');
  });

  it('refuses a malformed group name with 400 invalid_request; a group no channel is in refuses every call with 503', async () => {
    const { accountId, keyId, key } = await h.t.accountWithKey();
    for (const [method, path, body] of [
      ['POST', '/accounts', { name: 'x', group: '' }],
      ['PUT', `/accounts/${accountId}/group`, { group: 'a/b' }],
      ['PATCH', `/keys/${keyId}`, { group: 'x'.repeat(65) }],
      ['POST', `/accounts/${accountId}/keys`, { name: 'x', group: 'has space' }],
      ['PUT', `/accounts/${accountId}/group`, {}],
    ] as const) {
      const answer = await h.t.admin(method, path, body);
      expect(answer.statusCode, `${method} ${path}`).toBe(400);
      expect(answer.json().error.code).toBe('invalid_request');
    }
    expect((await h.t.admin('PUT', '/accounts/acct_nope/group', { group: null })).statusCode).toBe(404);
    await ok('PATCH', `/keys/${keyId}`, { group: 'gold' });
    expect((await refused(client(key), 'basic-model'))?.error).toMatchObject({ code: 'no_channel_available' });
  });

  it('bindings are events of the key and the account, kept by the projections, their rebuild and ledger verify', async () => {
    const account = await ok('POST', '/accounts', { name: 'audited', group: 'premium' });
    const key = await ok('POST', `/accounts/${account.id}/keys`, { name: 'k', group: 'default' });
    await ok('PATCH', `/keys/${key.id}`, { group: 'premium' });
    await ok('PUT', `/accounts/${account.id}/group`, { group: null });
    // Binding the group it already has appends nothing.
    await ok('PUT', `/accounts/${account.id}/group`, { group: null });
    const store = h.t.gateway.storage.store;
    const wallet = await store.readStream(`wallet-${account.id}`);
    expect(wallet.filter((e) => e.type === 'AccountGroupSet').map((e) => (e.data as { group: string | null }).group)).toEqual(['premium', null]);
    const keyEvents = await store.readStream(`key-${key.id}`);
    expect(keyEvents.map((e) => e.type)).toEqual(['KeyIssued', 'KeyUpdated']);
    expect((keyEvents[0]!.data as { group?: string }).group).toBe('default');
    expect((keyEvents[1]!.data as { changes: { group?: string } }).changes).toEqual({ group: 'premium' });

    const sql = h.t.db.sql;
    const rows = async () => ({
      accounts: await sql.query('SELECT account_id, channel_group FROM accounts ORDER BY account_id'),
      keys: await sql.query('SELECT key_id, channel_group FROM api_keys ORDER BY key_id'),
    });
    const live = await rows();
    expect(live.accounts).toContainEqual({ account_id: account.id, channel_group: null });
    expect(live.keys).toContainEqual({ key_id: key.id, channel_group: 'premium' });
    expect(await verifyLedger(store, sql)).toEqual([]);
    // verify compares the group: a projection that says otherwise is a difference.
    await sql.query('UPDATE api_keys SET channel_group = $2 WHERE key_id = $1', [key.id, 'default']);
    expect(await verifyLedger(store, sql)).toContainEqual({ subject: `key ${key.id}`, field: 'group', expected: '"premium"', actual: '"default"' });

    await h.t.gateway.runner.stop();
    await h.t.gateway.runner.rebuild(['accounts', 'keys']);
    h.t.gateway.runner.start(() => {});
    expect(await rows()).toEqual(live);
    expect(await verifyLedger(store, sql)).toEqual([]);
  });
});
