/**
 * Issue 20's "Done when": an enterprise with two members, two agents (one with a knowledge base) and
 * three keys (admin-issued, employee-requested with escrow, revoked), driven over HTTP with the openai
 * SDK against the upstream simulator. Runs on the embedded storage, and on Postgres + Redis when
 * DATABASE_URL / REDIS_URL are set.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pinnedOrder } from '../../src/http/agents/pin';
import { escrowLeft, available } from '../../src/commands/wallet/state';
import type { GatewayConfig } from '../../src/config/schema';
import { formatUsd, parseUsd } from '../../src/money/usd';
import { approvedKeyId } from '../../src/commands/enterprise/service';
import { verifyLedger } from '../../src/projections/verify';
import type { Simulator } from '../../src/simulator';
import { startSimulatedGateway, startTestGateway, type SimulatedGateway } from '../support/gateway';
import { chatConfig } from '../chat/support';

function config(sim: Simulator): GatewayConfig {
  const base = chatConfig(sim);
  const vision = { ...base.models.find((m) => m.id === 'chat-model')!, id: 'vision-model', aliases: [], capabilities: ['vision' as const] };
  return {
    ...base,
    models: [...base.models, vision],
    channels: base.channels.map((c) => (c.id === 'cc-a' || c.id === 'cc-b' ? { ...c, models: { ...c.models, 'vision-model': 'vision-model-upstream' } } : c)),
    agents: { default_model: 'resp-model' },
  };
}

let h: SimulatedGateway;
const admin = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown) => h.t.admin(method, path, body);
async function ok(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, status = method === 'POST' ? 201 : 200) {
  const res = await admin(method, path, body);
  if (res.statusCode !== status) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`);
  return res.json();
}
const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
const failure = (promise: Promise<unknown>) => promise.then(() => expect.fail('expected an error'), (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);

const USD = 1_000_000_000n;
let ent: string;
let alice: string; // enterprise admin
let bob: string; // member
let carol: string; // outsider who owns the shared knowledge base
let support: { id: string }; // agent with a knowledge base
let artist: { id: string }; // agent with a locked vision model
let k1: { id: string; key: string }; // admin-issued, no cap
let k2: { id: string; key: string }; // employee-requested, escrow 5 USD
let k3: { id: string; key: string }; // admin-issued, revoked

beforeAll(async () => {
  h = await startSimulatedGateway(config, { chatTimeoutMs: 5000 });
  const open = async (name: string) => (await ok('POST', '/accounts', { name })).id as string;
  ent = await open('Acme');
  alice = await open('alice');
  bob = await open('bob');
  carol = await open('carol');
  await ok('POST', `/accounts/${ent}/topups`, { amount_usd: '200.00', reference: 'inv-1' });
  await ok('PUT', `/accounts/${ent}/enterprise`, { allowed_models: ['chat-model', 'vision-model'], default_model: 'chat-model' });
  await ok('PUT', `/accounts/${ent}/members/${alice}`, { role: 'admin' });
  await ok('PUT', `/accounts/${ent}/members/${bob}`, { role: 'member' });
  // carol's team base, shared with alice (the support agent's creator).
  await ok('POST', `/accounts/${carol}/kbs`, { kb_id: 'handbook', title: 'Handbook', reader_account_ids: [alice] });
  await ok('PUT', `/accounts/${carol}/kbs/handbook/pages/refunds`, { title: 'Refund policy', body: 'Refunds are issued within 14 days of purchase.' }, 201);
  await ok('PUT', `/accounts/${carol}/kbs/handbook/pages/shipping`, { title: 'Shipping', body: 'Parcels ship on weekdays.' }, 201);
  support = await ok('POST', `/accounts/${ent}/agents`, {
    name: 'Support',
    creator_account_id: alice,
    system_prompt: 'You are the Acme support agent.',
    web_search: true,
    kb_ids: ['handbook'],
    temperature: 0.3,
    published: true,
  });
  artist = await ok('POST', `/accounts/${ent}/agents`, { name: 'Artist', creator_account_id: bob, system_prompt: 'You describe pictures.', model: 'vision-model' });
  k1 = await ok('POST', `/agents/${support.id}/keys`, { name: 'support desk', issued_by: alice });
  const request = await ok('POST', `/agents/${artist.id}/key-requests`, { name: "bob's key", requested_by: bob, spend_cap_usd: '5.00' });
  expect(request).toMatchObject({ status: 'pending', spend_cap_usd: '5.00', requested_by: bob });
  expect((await ok('GET', `/accounts/${ent}/key-requests?status=pending`)).data.map((r: { id: string }) => r.id)).toEqual([request.id]);
  k2 = await ok('POST', `/key-requests/${request.id}/approve`, { approved_by: alice });
  k3 = await ok('POST', `/agents/${support.id}/keys`, { name: 'old key', issued_by: alice });
  await ok('POST', `/keys/${k3.id}/revoke`, undefined, 200);
}, 60_000);
afterAll(() => h?.close());

const lastUpstream = () => h.sim.requests.at(-1)!;

describe('enterprise agents over HTTP', () => {
  it('lists the enterprise as a console needs it: members, agents, keys, requests', async () => {
    expect((await ok('GET', `/accounts/${ent}/enterprise`)).members).toEqual(
      [
        { account_id: alice, role: 'admin' },
        { account_id: bob, role: 'member' },
      ].sort((a, b) => a.account_id.localeCompare(b.account_id)),
    );
    expect((await ok('GET', `/accounts/${ent}/members`)).data.map((m: { account_id: string }) => m.account_id).sort()).toEqual([alice, bob].sort());
    expect((await ok('GET', `/accounts/${ent}/agents`)).data.map((a: { name: string }) => a.name)).toEqual(['Support', 'Artist']);
    const keys = (await ok('GET', `/accounts/${ent}/keys`)).data as Array<{ id: string; agent_id: string; status: string; spend_cap_usd: string | null }>;
    // Keys created within one second are listed by id.
    const byId = (a: unknown[], b: unknown[]) => String(a[0]).localeCompare(String(b[0]));
    expect(keys.map((k) => [k.id, k.agent_id, k.status, k.spend_cap_usd]).sort(byId)).toEqual(
      [
        [k1.id, support.id, 'active', null],
        [k2.id, artist.id, 'active', '5.00'],
        [k3.id, support.id, 'revoked', null],
      ].sort(byId),
    );
    expect(k1.key).toMatch(/^sk-.{8}-[0-9a-f]{64}$/);
    expect(k1.key).toHaveLength(76);
    expect((await ok('GET', `/accounts/${ent}/key-requests?status=pending`)).data).toEqual([]);
  });

  it('moves the cap of an approved key into its escrow, exactly', async () => {
    const wallet = await h.t.gateway.ledger.wallet(ent);
    expect(wallet.escrows.get(k2.id)).toEqual({ funded: 5n * USD, open: true, returned: 0n });
    expect(escrowLeft(wallet, k2.id)).toBe(5n * USD);
    expect(available(wallet)).toBe(wallet.balance - wallet.held - 5n * USD);
    const ledger = (await ok('GET', `/accounts/${ent}/ledger`)).data as Array<{ type: string; data: Record<string, unknown> }>;
    expect(ledger.filter((e) => e.type === 'EscrowFunded').map((e) => [e.data.key_id, e.data.amount])).toEqual([[k2.id, '5000000000']]);
  });

  it('forwards exactly the rewritten request: agent model, system prompt first, injected pages, tools dropped, agent temperature', async () => {
    const answer = await client(k1.key).chat.completions.create({
      model: 'anything-the-client-says',
      messages: [
        { role: 'system', content: 'Answer in English.' },
        { role: 'user', content: 'What is your refund policy?' },
      ],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }],
    });
    expect(answer.choices[0]!.message.content).toBe('Echo: What is your refund policy?');
    const sent = lastUpstream();
    expect(sent.path).toBe('/cc-a/v1/chat/completions');
    expect(sent.body).toEqual({
      model: 'chat-model-upstream',
      messages: [
        { role: 'system', content: 'You are the Acme support agent.' },
        {
          role: 'system',
          content: "Knowledge base pages relevant to the user's latest message:\n\n## Refund policy (handbook/refunds)\nRefunds are issued within 14 days of purchase.",
        },
        { role: 'system', content: 'Answer in English.' },
        { role: 'user', content: 'What is your refund policy?' },
      ],
      temperature: 0.3,
    });
  });

  it('enables the agent built-in web search on a streamed call whose channel supports it, and keeps a temperature the client set', async () => {
    const stream = await client(k1.key).chat.completions.create({
      model: 'x',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
      temperature: 1,
      functions: [{ name: 'f', parameters: {} }],
    });
    for await (const _chunk of stream) void _chunk;
    const body = lastUpstream().body as Record<string, unknown>;
    expect(body.tools).toEqual([{ type: 'web_search' }]);
    expect(body.functions).toBeUndefined();
    expect(body.temperature).toBe(1);
    expect(body.model).toBe('chat-model-upstream');
  });

  it("uses the agent's locked vision model, accepts images there, and bills the escrow", async () => {
    const before = (await h.t.gateway.ledger.wallet(ent)).balance;
    const answer = await client(k2.key).chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }],
      max_tokens: 100,
    });
    expect(answer.usage!.total_tokens).toBeGreaterThan(0);
    const body = lastUpstream().body as { model: string; messages: Array<{ role: string; content: unknown }>; temperature?: number };
    expect(body.model).toBe('vision-model-upstream');
    expect(body.messages[0]).toEqual({ role: 'system', content: 'You describe pictures.' });
    expect(body.temperature).toBeUndefined();
    await expect.poll(async () => (await h.t.gateway.ledger.wallet(ent)).keys.get(k2.id)?.spent ?? 0n).toBeGreaterThan(0n);
    const wallet = await h.t.gateway.ledger.wallet(ent);
    const spent = wallet.keys.get(k2.id)!.spent;
    expect(escrowLeft(wallet, k2.id)).toBe(5n * USD - spent);
    expect(wallet.balance).toBe(before - spent);
  });

  it('pins a conversation to one channel by its session_id header', async () => {
    // A session whose rendezvous choice is not the first channel by priority.
    let session = 'conversation-0';
    for (let i = 0; pinnedOrder(['cc-a', 'cc-b', 'cc-c'], session, (c) => c)[0] === 'cc-a'; i++) session = `conversation-${i}`;
    const chosen = pinnedOrder(['cc-a', 'cc-b', 'cc-c'], session, (c) => c)[0]!;
    const paths = [];
    for (let turn = 0; turn < 3; turn++) {
      await client(k1.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: `turn ${turn}` }] }, { headers: { session_id: session } });
      paths.push(lastUpstream().path);
    }
    expect(paths).toEqual([1, 2, 3].map(() => `/${chosen}/v1/chat/completions`));
    await client(k1.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'no session' }] });
    expect(lastUpstream().path).toBe('/cc-a/v1/chat/completions');
  });

  it('refuses with 400: a bad body, an image to a model without vision, conversation_id in the body', async () => {
    const calls = h.sim.requests.length;
    const bad = await failure(client(k1.key).chat.completions.create({ model: 'x', messages: [] }));
    expect([bad.status, bad.code, bad.type]).toEqual([400, 'invalid_request', 'invalid_request_error']);
    const image = await failure(
      client(k1.key).chat.completions.create({ model: 'vision-model', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] }),
    );
    expect([image.status, image.code]).toEqual([400, 'model_no_vision']);
    const conversation = await failure(
      client(k1.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], conversation_id: 'c1' } as never),
    );
    expect([conversation.status, conversation.code]).toEqual([400, 'invalid_request']);
    expect(conversation.message).toContain('conversation_id');
    expect(h.sim.requests.length).toBe(calls);
  });

  it('refuses with 401: invalid, revoked and expired keys', async () => {
    const invalid = await failure(client(`sk-abcdefghi-${'0'.repeat(64)}`).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
    expect([invalid.status, invalid.code]).toEqual([401, 'invalid_api_key']);
    const revoked = await failure(client(k3.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
    expect([revoked.status, revoked.code]).toEqual([401, 'invalid_api_key']);
    expect(revoked.message).toContain('revoked');
    const expiring = await ok('POST', `/agents/${support.id}/keys`, { name: 'temp', issued_by: alice });
    await ok('PATCH', `/keys/${expiring.id}`, { expires_at: 1000 });
    const expired = await failure(client(expiring.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
    expect([expired.status, expired.code]).toEqual([401, 'invalid_api_key']);
    expect(expired.message).toContain('expired');
    await ok('DELETE', `/keys/${expiring.id}`);
  });

  it('a revocation on another instance refuses the next call here at once', async () => {
    const fresh = await ok('POST', `/agents/${support.id}/keys`, { name: 'two instances', issued_by: alice });
    // Authentication here now holds the key as usable (its cache is fresh for a second).
    const first = await client(fresh.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    expect(first.choices[0]!.message.content).toBeTruthy();
    const other = await startTestGateway({ config: config(h.sim), db: h.t.db });
    try {
      const revoked = await other.admin('POST', `/keys/${fresh.id}/revoke`);
      expect(revoked.statusCode).toBe(200);
      const refused = await failure(client(fresh.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
      expect([refused.status, refused.code]).toEqual([401, 'invalid_api_key']);
      expect(refused.message).toContain('revoked');
    } finally {
      await other.close();
    }
  });

  it("refuses with 402: past the enterprise's balance, and past the key's cap (naming it)", async () => {
    const balance = await failure(client(k1.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], max_tokens: 200_000_000 }));
    expect([balance.status, balance.code, balance.type]).toEqual([402, 'quota_exceeded', 'insufficient_quota']);
    const cap = await failure(client(k2.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3_000_000 }));
    expect([cap.status, cap.code]).toEqual([402, 'quota_exceeded']);
    expect(cap.message).toContain('spend cap of 5.00 USD');
    // Approving a request the enterprise cannot fund: 402, nothing moved.
    const big = await ok('POST', `/agents/${artist.id}/key-requests`, { name: 'too big', requested_by: bob, spend_cap_usd: '100000.00' });
    const refused = await admin('POST', `/key-requests/${big.id}/approve`, { approved_by: alice });
    expect(refused.statusCode).toBe(402);
    expect(refused.json().error.code).toBe('insufficient_funds');
    expect((await h.t.gateway.ledger.wallet(ent)).escrows.has(approvedKeyId(big.id))).toBe(false);
    await ok('POST', `/key-requests/${big.id}/reject`, { rejected_by: alice, reason: 'too big' }, 200);
    // Only an admin decides; a decided request stays decided.
    const again = await admin('POST', `/key-requests/${big.id}/approve`, { approved_by: alice });
    expect([again.statusCode, again.json().error.code]).toEqual([409, 'key_request_decided']);
    const byMember = await ok('POST', `/agents/${artist.id}/key-requests`, { name: 'self-approved', requested_by: bob, spend_cap_usd: '1.00' });
    const refusedMember = await admin('POST', `/key-requests/${byMember.id}/approve`, { approved_by: bob });
    expect([refusedMember.statusCode, refusedMember.json().error.code]).toEqual([403, 'not_enterprise_admin']);
    // An approval that set the escrow aside and then failed before its key: the rejection gives it back.
    const funded = await h.t.gateway.ledger.fundEscrow(ent, approvedKeyId(byMember.id), parseUsd('1.00'), byMember.id);
    expect(funded.ok).toBe(true);
    await ok('POST', `/key-requests/${byMember.id}/reject`, { rejected_by: alice }, 200);
    expect((await h.t.gateway.ledger.wallet(ent)).escrows.get(approvedKeyId(byMember.id))).toEqual({ funded: USD, open: false, returned: USD });
  });

  it('refuses with 403: unpublished or deleted agent, another enterprise, model off the allow-list, knowledge no longer readable, and any other endpoint', async () => {
    const hi = { model: 'x', messages: [{ role: 'user' as const, content: 'hi' }] };
    await ok('PATCH', `/agents/${artist.id}`, { published: false });
    const unpublished = await failure(client(k2.key).chat.completions.create(hi));
    expect([unpublished.status, unpublished.code, unpublished.type]).toEqual([403, 'permission_denied', 'permission_error']);
    await ok('PATCH', `/agents/${artist.id}`, { published: true });

    const doomed = await ok('POST', `/accounts/${ent}/agents`, { name: 'Doomed', creator_account_id: alice, system_prompt: 'x' });
    const doomedKey = await ok('POST', `/agents/${doomed.id}/keys`, { name: 'd', issued_by: alice });
    await ok('DELETE', `/agents/${doomed.id}`);
    expect((await failure(client(doomedKey.key).chat.completions.create(hi))).status).toBe(403);

    // A key of another account bound to this enterprise's agent (not possible through the admin API).
    const other = await h.t.gateway.ledger.issueKey(carol, { name: 'foreign', allowed_models: null, expires_at: null, enabled: true, spend_cap: null }, 'test', {
      agent: { agentId: support.id, issuedBy: 'test', requestId: null },
    });
    if (!other.ok) throw new Error('issue');
    await h.t.gateway.runner.waitFor(other.position);
    expect((await failure(client(other.raw).chat.completions.create(hi))).status).toBe(403);

    // No enterprise default: the support agent falls back to the platform default (resp-model), off the list.
    await ok('PUT', `/accounts/${ent}/enterprise`, { allowed_models: ['vision-model'], default_model: null });
    const offList = await failure(client(k1.key).chat.completions.create(hi));
    expect([offList.status, offList.message]).toEqual([403, expect.stringContaining('`resp-model` is not on the enterprise')]);
    await ok('PUT', `/accounts/${ent}/enterprise`, { allowed_models: ['chat-model', 'vision-model'], default_model: 'chat-model' });

    await ok('PATCH', `/accounts/${carol}/kbs/handbook`, { reader_account_ids: [] });
    const kb = await failure(client(k1.key).chat.completions.create(hi));
    expect([kb.status, kb.message]).toEqual([403, expect.stringContaining('handbook')]);
    await ok('PATCH', `/accounts/${carol}/kbs/handbook`, { reader_account_ids: [alice] });

    const models = await fetch(`${h.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${k1.key}` } });
    expect(models.status).toBe(403);
    expect(await models.json()).toEqual({ error: { message: expect.any(String), type: 'permission_error', code: 'permission_denied' } });
    const messages = await fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': k1.key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'msg-model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(messages.status).toBe(403);
    expect(await messages.json()).toEqual({ type: 'error', error: { type: 'permission_error', message: expect.any(String) } });
    const balance = await fetch(`${h.baseUrl}/v1/key/balance`, { headers: { authorization: `Bearer ${k1.key}` } });
    expect(balance.status).toBe(403);
    // Still a working agent key afterwards.
    expect((await client(k1.key).chat.completions.create(hi)).choices[0]!.message.content).toBe('Echo: hi');
  });

  it("attributes usage per agent: logs and usage filter by agent and by key", async () => {
    await h.t.gateway.ledger.idle();
    await expect
      .poll(async () => (await ok('GET', `/accounts/${ent}/logs?agent_id=${artist.id}&status=success`)).data.length)
      .toBeGreaterThanOrEqual(1);
    const artistRows = (await ok('GET', `/accounts/${ent}/logs?agent_id=${artist.id}`)).data as Array<{ agent_id: string; key_name: string }>;
    expect(new Set(artistRows.map((r) => r.agent_id))).toEqual(new Set([artist.id]));
    const byKey = (await ok('GET', `/accounts/${ent}/logs?key_id=${k1.id}`)).data as Array<{ agent_id: string }>;
    expect(byKey.length).toBeGreaterThan(0);
    expect(new Set(byKey.map((r) => r.agent_id))).toEqual(new Set([support.id]));
    const usage = await ok('GET', `/accounts/${ent}/usage?agent_id=${artist.id}`);
    const spent = (await h.t.gateway.ledger.wallet(ent)).keys.get(k2.id)!.spent;
    expect(usage.cost_usd).toBe(formatUsd(spent));
    expect(usage.success_requests).toBe(1);
  });

  it('returns what is left of the escrow on revocation, exactly, and records every action in the audit trail in order', async () => {
    await ok('GET', `/keys/${k1.id}/reveal`);
    const before = await h.t.gateway.ledger.wallet(ent);
    const left = escrowLeft(before, k2.id);
    await ok('POST', `/keys/${k2.id}/revoke`, undefined, 200);
    const after = await h.t.gateway.ledger.wallet(ent);
    expect(after.escrows.get(k2.id)).toEqual({ funded: 5n * USD, open: false, returned: left });
    expect(available(after)).toBe(available(before) + left);
    expect(after.balance).toBe(before.balance);
    const revoked = await failure(client(k2.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
    expect(revoked.status).toBe(401);
    const ledger = (await ok('GET', `/accounts/${ent}/ledger`)).data as Array<{ type: string; data: Record<string, unknown> }>;
    expect(ledger.filter((e) => e.type === 'EscrowReturned' && e.data.key_id === k2.id).map((e) => [e.data.key_id, e.data.amount])).toEqual([[k2.id, String(left)]]);

    const audit = (await ok('GET', `/accounts/${ent}/audit`)).data as Array<{ action: string; subject_id: string; actor: string | null }>;
    const actions = audit.map((a) => `${a.action}:${a.subject_id}`);
    if (process.env.DEBUG_AUDIT) console.log(JSON.stringify(audit, null, 1));
    const expected = [
      `AccountOpened:${ent}`,
      `WalletToppedUp:${ent}`,
      `EnterpriseConfigured:${ent}`,
      `MemberSet:${ent}`,
      `MemberSet:${ent}`,
      `AgentCreated:${support.id}`,
      `AgentCreated:${artist.id}`,
      `KeyIssued:${k1.id}`,
      expect.stringMatching(/^KeyRequested:kreq_/),
      `EscrowFunded:${ent}`,
      `KeyIssued:${k2.id}`,
      expect.stringMatching(/^KeyRequestApproved:kreq_/),
      `KeyIssued:${k3.id}`,
      `KeyRevoked:${k3.id}`,
    ];
    expect(actions.slice(0, expected.length)).toEqual(expected);
    const tail = actions.slice(expected.length);
    const order = (prefix: string) => tail.findIndex((a) => a.startsWith(prefix));
    for (const step of ['KeyRequested:', 'KeyRequestRejected:', 'AgentUpdated:', 'KeyRevealed:', 'KeyRevoked:', 'EscrowReturned:']) expect(order(step)).toBeGreaterThanOrEqual(0);
    expect(order('KeyRequestRejected:')).toBeGreaterThan(order('KeyRequested:'));
    expect(tail.findLastIndex((a) => a.startsWith('EscrowReturned:'))).toBe(order(`KeyRevoked:${k2.id}`) + 1);
    expect(order(`KeyRevealed:${k1.id}`)).toBeLessThan(order(`KeyRevoked:${k2.id}`));
    expect(audit.find((a) => a.action === 'KeyIssued' && a.subject_id === k2.id)!.actor).toBe(alice);
  });

  it('refuses with 401 once the enterprise account is inactive, and ledger verify is clean', async () => {
    await ok('POST', `/accounts/${ent}/deactivate`, {}, 200);
    const inactive = await failure(client(k1.key).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
    expect([inactive.status, inactive.code]).toEqual([401, 'invalid_api_key']);
    expect(inactive.message).toContain('inactive');
    await h.t.gateway.ledger.idle();
    await expect.poll(async () => verifyLedger(h.t.gateway.storage.store, h.t.db.sql), { timeout: 10_000 }).toEqual([]);
  });
});
