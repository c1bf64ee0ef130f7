/**
 * Issue 33, item 7: `/openapi.json` types the answers, not only the requests. Every client and admin
 * operation's success has a named response schema (made from the zod schemas of
 * src/http/openapi/answers/), and real answers of the gateway, over HTTP with the simulator as upstream
 * (each chat protocol natively and translated from the three others, media tasks to their end, the
 * knowledge API, the operator's API), validate against the document's schemas with ajv: an answer that
 * drifts from the document fails here. On PGlite, or on Postgres and Redis when DATABASE_URL / REDIS_URL are set.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatProtocol, GatewayConfig } from '../../src/config/schema';
import { MediaProbe } from '../../src/media-check/media-probe';
import { OPERATION_ANSWERS } from '../../src/http/openapi/answers';
import type { Simulator } from '../../src/simulator';
import { speechConfig, FAST_SPEECH } from '../media/speech-support';
import { mediaChannel, mediaModel, startTaskHarness } from '../media/task-support';
import { imagesConfig } from '../media/support';
import { startMediaServer, type MediaServer } from '../media-check/media-server';
import type { SimulatedGateway } from '../support/gateway';
import { MODEL_OF, translationConfig } from '../translate/sdk-support';
import { startStripeStandIn, type StripeStandIn } from '../support/stripe-stand-in';

type Json = Record<string, any>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
/** Operations that never succeed (the document says so: no 2xx). */
const NEVER_SUCCEED = ['createEmbedding', 'mcpGet', 'mcpDelete'];
/** Not an API: the console's HTML pages (their answers are described by media type only). */
const NOT_CLIENT_TAGS = ['console'];

/** The config file a reload reads (GATEWAY_CONFIG): the harness's config, written when it is made. */
const dir = mkdtempSync(join(tmpdir(), 'openapi-answers-'));
const CONFIG_FILE = join(dir, 'gateway.json');

/** Every protocol's chat channels (translationConfig), the image, speech and task SKUs of the media specs. */
function config(sim: Simulator): GatewayConfig {
  const made = harnessConfig(sim);
  writeFileSync(CONFIG_FILE, JSON.stringify(made));
  return made;
}

function harnessConfig(sim: Simulator): GatewayConfig {
  const chat = translationConfig(sim);
  const images = imagesConfig(sim);
  const speech = speechConfig(sim);
  return {
    models: [
      ...chat.models,
      ...images.models.filter((m) => m.kind === 'image'),
      ...speech.models.filter((m) => m.kind === 'speech'),
      mediaModel({ id: 'vid-flat', kind: 'video', price: { per_second: '0.15' } }),
      mediaModel({ id: 'mus-a', kind: 'music', price: { per_call: '0.10' } }),
      mediaModel({ id: 'tr-a', kind: 'transcript', price: { per_call: '0.02' } }),
      mediaModel({ id: 'avatar-std', kind: 'avatar', price: { per_call: '2.00' } }),
      mediaModel({ id: 'clip-nw', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-news', resolution_required: false, video_mode: false, token_billing: false } }),
    ],
    channels: [
      ...chat.channels,
      ...images.channels.filter((c) => c.protocol === 'images'),
      ...speech.channels,
      mediaChannel(sim, 'vid-a', 'videos', ['vid-flat']),
      mediaChannel(sim, 'mus-a', 'music', ['mus-a']),
      mediaChannel(sim, 'tr-a', 'transcripts', ['tr-a']),
      mediaChannel(sim, 'av-a', 'avatars', ['avatar-std']),
      mediaChannel(sim, 'clip-a', 'videos', ['clip-nw']),
    ],
    presets: { voices: [{ id: 'alloy', name: 'Alloy' }], avatars: [{ id: 'anna', name: 'Anna' }] },
    // Sign-up on (no SMTP_URL: its mails go to the outbox).
    signup: { enabled: true, grant_usd: '40.44', require_email_verification: true, per_ip_per_hour: 5, per_email_per_hour: 3 },
  };
}

let h: SimulatedGateway;
/** Where avatar sources are (the URL probe reads them). */
let media: MediaServer;
/** Stripe's stand-in: the billing API and the webhook are mounted with Stripe configured. */
let stripe: StripeStandIn;
let doc: Json;
let ajv: Ajv2020;
let key: string;
let accountId: string;
/** The operations and statuses whose real answers were checked. */
const checked = new Set<string>();

beforeAll(async () => {
  stripe = await startStripeStandIn();
  media = await startMediaServer({ 'photo.jpg': { body: readFileSync(new URL('../media-check/fixtures/photo-100x100.jpg', import.meta.url)), type: 'image/jpeg' } });
  h = await startTaskHarness(config, { speechTimings: FAST_SPEECH, chatTimeoutMs: 5000, env: { GATEWAY_CONFIG: CONFIG_FILE, ...stripe.env() }, mediaProbe: new MediaProbe({ allowPrivateAddresses: true, timeoutMs: 3000 }) });
  doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as Json;
  ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  ajv.addSchema({ $id: COMPONENTS, $defs: doc.components.schemas });
  ({ key, accountId } = await h.t.accountWithKey());
});

afterAll(async () => {
  await h?.close();
  await media?.close();
  await stripe?.close();
  rmSync(dir, { recursive: true, force: true });
});

const COMPONENTS = 'https://gateway.test/components';
const againstDocument = (schema: unknown) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${COMPONENTS}#/$defs/`));

function operations(): { method: string; path: string; op: Json }[] {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ method, path, op: op as Json })),
  );
}

const operation = (operationId: string) => {
  const found = operations().find(({ op }) => op.operationId === operationId);
  if (!found) throw new Error(`no operation ${operationId} in the document`);
  return found.op;
};

const validators = new Map<string, ValidateFunction>();

/** The answer `body` with `status` validates against what the document says `operationId` answers. */
function expectDocumented(operationId: string, status: number, body: unknown, mediaType = 'application/json') {
  const where = `${operationId} ${status}`;
  const answer = operation(operationId).responses[String(status)];
  expect(answer, `${where}: the document lists no such answer`).toBeDefined();
  const schema = answer.content?.[mediaType]?.schema;
  expect(schema, `${where}: no ${mediaType} schema`).toBeDefined();
  let validate = validators.get(`${where} ${mediaType}`);
  if (!validate) {
    validate = ajv.compile(againstDocument(schema));
    validators.set(`${where} ${mediaType}`, validate);
  }
  expect(validate(body), `${where}: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(body).slice(0, 2000)}`).toBe(true);
  checked.add(where);
}

/** A request over HTTP; its status, and its body as JSON. */
async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; type: string | null }> {
  // A body with its own content type is sent as it is (a source file).
  const raw = headers['content-type'] !== undefined;
  const response = await fetch(`${h.baseUrl}${path}`, {
    method,
    headers: { ...(body !== undefined && !raw ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: raw ? (body as string) : JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: the test says what it expected
  }
  return { status: response.status, body: json, type: response.headers.get('content-type') };
}
const client = (method: string, path: string, body?: unknown) => call(method, path, body, { authorization: `Bearer ${key}` });
const admin = (method: string, path: string, body?: unknown) => call(method, `/admin/v1${path}`, body, { authorization: 'Bearer test-admin-token' });

/** Calls `operationId` and checks its answer: the status expected, the body the document's. */
async function expectAnswer(operationId: string, expected: number, pending: Promise<{ status: number; body: any }>): Promise<any> {
  const { status, body } = await pending;
  expect(status, `${operationId}: ${JSON.stringify(body).slice(0, 500)}`).toBe(expected);
  expectDocumented(operationId, status, body);
  return body;
}

/** Polls until `done` holds for a 200 answer. */
async function until(path: string, done: (body: any) => boolean, timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, body } = await client('GET', path);
    if (status === 200 && done(body)) return body;
    if (Date.now() > deadline) throw new Error(`${path} never got there: ${status} ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 30));
  }
}

describe('every client, admin and operational endpoint documents its answer', () => {
  it('a success (200/201) with a named, non-empty schema for each JSON answer and a media type for any other', () => {
    const missing: string[] = [];
    for (const { method, path, op } of operations()) {
      if (op.tags.some((tag: string) => NOT_CLIENT_TAGS.includes(tag))) continue;
      const where = `${op.operationId} (${method.toUpperCase()} ${path})`;
      const successes = Object.entries(op.responses as Json).filter(([status]) => /^2\d\d$/.test(status));
      if (NEVER_SUCCEED.includes(op.operationId)) {
        expect(successes, where).toEqual([]);
        continue;
      }
      // An upgrade (the Responses WebSocket) succeeds by switching protocols: its answer is the socket's.
      const switches = '101' in (op.responses as Json);
      if (!switches && !successes.some(([status]) => status === '200' || status === '201')) missing.push(`${where}: no 200 or 201`);
      for (const [status, answer] of successes) {
        for (const [type, media] of Object.entries((answer.content ?? {}) as Json)) {
          const schema = media.schema as Json;
          if (type === 'application/json') {
            // A named component: a generated client gets a type of that name.
            const ref = typeof schema.$ref === 'string' ? schema.$ref : '';
            const component = ref.startsWith('#/components/schemas/') ? doc.components.schemas[ref.slice('#/components/schemas/'.length)] : undefined;
            if (!component) missing.push(`${where} ${status}: not a component (${JSON.stringify(schema)})`);
            else if (!component.properties && !component.anyOf && !component.items) missing.push(`${where} ${status}: ${ref} says nothing`);
          } else if (schema.contentMediaType !== type) missing.push(`${where} ${status} ${type}: no contentMediaType`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('each answer assigned to an operation is one of its documented statuses (no stale entry)', () => {
    for (const [operationId, statuses] of Object.entries(OPERATION_ANSWERS))
      for (const [status, name] of Object.entries(statuses)) {
        const answer = operation(operationId).responses[status];
        expect(answer?.content?.['application/json']?.schema, `${operationId} ${status}`).toEqual({ $ref: `#/components/schemas/${name}` });
      }
  });

  it('the binary answers say what they are: speech audio by its formats, hosted files as bytes', () => {
    const speech = operation('createSpeech').responses['200'].content;
    expect(Object.keys(speech)).toEqual(expect.arrayContaining(['audio/mpeg', 'audio/wav', 'application/json']));
    expect(speech['audio/mpeg'].schema).toEqual({ type: 'string', contentMediaType: 'audio/mpeg' });
    expect(speech['application/json'].schema).toEqual({ $ref: '#/components/schemas/SpeechSubmitted' });
    expect(operation('downloadHostedMedia').responses['206'].content['application/octet-stream'].schema.contentMediaType).toBe('application/octet-stream');
  });

  it('error statuses keep the error shape of their protocol', () => {
    expect(operation('createMessage').responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/MessagesError' });
    expect(operation('generateContent').responses.default.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/GenerateError' });
    expect(operation('listAccounts').responses['401'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/AdminError' });
  });
});

const PROTOCOLS: ChatProtocol[] = ['chat-completions', 'messages', 'responses', 'generate-content'];

/** A non-stream call of `protocol` for `model`: its operation and request. */
function chatCall(protocol: ChatProtocol, model: string): [string, Promise<{ status: number; body: any }>] {
  const user = 'Say hello';
  switch (protocol) {
    case 'chat-completions':
      return ['createChatCompletion', client('POST', '/v1/chat/completions', { model, messages: [{ role: 'user', content: user }] })];
    case 'messages':
      return ['createMessage', client('POST', '/v1/messages', { model, max_tokens: 64, messages: [{ role: 'user', content: user }] })];
    case 'responses':
      return ['createResponse', client('POST', '/v1/responses', { model, input: user })];
    case 'generate-content':
      return ['generateContent', client('POST', `/v1beta/models/${model}:generateContent`, { contents: [{ role: 'user', parts: [{ text: user }] }] })];
  }
}

describe('real answers validate against the published schemas', () => {
  it('the four chat protocols, each from a channel of its own protocol and translated from the three others', async () => {
    for (const client of PROTOCOLS)
      for (const upstream of PROTOCOLS) {
        const [operationId, pending] = chatCall(client, MODEL_OF[upstream]);
        await expectAnswer(operationId, 200, pending);
      }
    const stream = await client('POST', `/v1beta/models/${MODEL_OF['generate-content']}:streamGenerateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    expect(stream.status).toBe(200);
    expectDocumented('streamGenerateContent', 200, stream.body);
    await expectAnswer('countMessageTokens', 200, client('POST', '/v1/messages/count_tokens', { model: MODEL_OF.messages, messages: [{ role: 'user', content: 'hi' }] }));
    const gemini = MODEL_OF['generate-content'];
    await expectAnswer('countContentTokens', 200, client('POST', `/v1beta/models/${gemini}:countTokens`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }));
    await expectAnswer('listGenerateContentModels', 200, client('GET', '/v1beta/models'));
    await expectAnswer('getGenerateContentModel', 200, client('GET', `/v1beta/models/${gemini}`));
  });

  it('models, balance, billing views and usage', async () => {
    await expectAnswer('listModels', 200, client('GET', '/v1/models'));
    await expectAnswer('retrieveModel', 200, client('GET', `/v1/models/${MODEL_OF.messages}`));
    await expectAnswer('listPublicModels', 200, call('GET', '/api/v1/models/public'));
    await expectAnswer('getKeyBalance', 200, client('GET', '/v1/key/balance'));
    for (const prefix of ['/v1', '']) {
      const suffix = prefix === '' ? 'Unprefixed' : '';
      await expectAnswer(`getBillingSubscription${suffix}`, 200, client('GET', `${prefix}/dashboard/billing/subscription`));
      await expectAnswer(`getBillingUsage${suffix}`, 200, client('GET', `${prefix}/dashboard/billing/usage`));
    }
    const usage = await expectAnswer('getUsage', 200, client('GET', '/api/v1/usage'));
    expect(usage.total_requests).toBeGreaterThan(0);
    expect(usage.by_model.length).toBeGreaterThan(0);
  });

  it('images: synchronous, asynchronous, the poll in flight and at its end, the list', async () => {
    await expectAnswer('createImage', 200, client('POST', '/v1/images/generations', { model: 'img-model', prompt: 'a red cube' }));
    const task = await expectAnswer('createImage', 200, client('POST', '/v1/images/generations', { model: 'img-model', prompt: 'a blue cube', async: true }));
    const first = await client('GET', `/v1/images/generations/${task.id}`);
    if (first.status === 202) expectDocumented('getImageTask', 202, first.body);
    const deadline = Date.now() + 15_000;
    let final = first;
    while (final.status === 202 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 30));
      final = await client('GET', `/v1/images/generations/${task.id}`);
    }
    expect(final.status, JSON.stringify(final.body)).toBe(200);
    expectDocumented('getImageTask', 200, final.body);
    await expectAnswer('editImage', 200, client('POST', '/v1/images/edits', { model: 'img-model', prompt: 'edit', image_urls: [`${media.origin}/photo.jpg`] }));
    const list = await expectAnswer('listImageTasks', 200, client('GET', '/v1/images/generations'));
    expect(list.data.length).toBeGreaterThan(0);
  });

  it('video, music and speech tasks from their submission to their end, and their lists', async () => {
    const video = await expectAnswer('createVideo', 200, client('POST', '/v1/videos/generations', { model: 'vid-flat', content: [{ type: 'text', text: 'a red cube' }] }));
    expectDocumented('getVideo', 200, await until(`/v1/videos/generations/${video.id}`, (b) => b.status === 'succeeded'));
    await expectAnswer('listVideos', 200, client('GET', '/v1/videos/generations'));

    const music = await expectAnswer('createMusic', 200, client('POST', '/v1/music/generations', { model: 'mus-a', prompt: 'a calm sea at dawn' }));
    expectDocumented('getMusic', 200, await until(`/v1/music/generations/${music.id}`, (b) => b.status === 'succeeded'));
    const stems = await expectAnswer('createMusicAsset', 200, client('POST', '/v1/music/assets', { action: 'stems', song_id: `${music.id}-1` }));
    expectDocumented('getMusic', 200, await until(`/v1/music/generations/${stems.id}`, (b) => b.status === 'succeeded'));
    await expectAnswer('listMusic', 200, client('GET', '/v1/music/generations'));

    const audio = await client('POST', '/v1/audio/speech', { model: 'tts-a', input: 'Hello there', voice: 'alloy' });
    expect(audio.status).toBe(200);
    const audioType = audio.type!.split(';')[0]!;
    expect(Object.keys(operation('createSpeech').responses['200'].content)).toContain(audioType);
    const speech = await expectAnswer('createSpeech', 200, client('POST', '/v1/audio/speech', { model: 'tts-a', input: 'Hello there', voice: 'alloy', async: true }));
    expectDocumented('getSpeech', 200, await until(`/v1/audio/speech/${speech.id}`, (b) => b.status === 'succeeded'));
    await expectAnswer('listSpeech', 200, client('GET', '/v1/audio/speech'));
  });

  it('voices, avatars, clip templates and transcripts', async () => {
    await expectAnswer('createVoice', 200, client('POST', '/v1/audio/voices', { name: 'My voice', audio_url: 'https://example.com/recordings/me.wav' }));
    await expectAnswer('cloneVoice', 200, client('POST', '/v1/audio/voice-clone', { name: 'Second voice', audio_url: 'https://example.com/recordings/me.wav' }));
    const voices = await expectAnswer('listVoices', 200, client('GET', '/v1/audio/voices'));
    expect(voices.voices.length).toBe(2);
    await expectAnswer('listAvatarPresets', 200, client('GET', '/v1/videos/avatars/presets'));
    const avatar = await expectAnswer('createAvatar', 200, client('POST', '/v1/videos/avatars', { name: 'Host Anna', source_url: `${media.origin}/photo.jpg` }));
    expectDocumented('getAvatar', 200, await until(`/v1/videos/avatars/${avatar.id}`, (b) => b.status === 'ready'));
    await expectAnswer('listAvatars', 200, client('GET', '/v1/videos/avatars'));
    await expectAnswer('deleteAvatar', 200, client('DELETE', `/v1/videos/avatars/${avatar.id}`));
    const templates = await expectAnswer('listClipTemplates', 200, client('GET', '/v1/videos/clip-templates?scene=newsMixCutting'));
    expect(templates.templates.length).toBeGreaterThan(0);
    await expectAnswer('getClipTemplate', 200, client('GET', `/v1/videos/clip-templates/${templates.templates[0].id}`));
    await expectAnswer('extractTranscript', 200, client('POST', '/v1/transcripts/extract', { model: 'tr-a', url: 'https://media.example.com/calls/meeting.mp3' }));
  });

  it('the knowledge API and MCP, over pages the operator wrote', async () => {
    await expectAnswer('putObject', 201, call('PUT', '/admin/v1/objects/sources/guide.txt', 'the guide', { authorization: 'Bearer test-admin-token', 'content-type': 'text/plain' }));
    await expectAnswer('createKnowledgeBase', 201, admin('POST', `/accounts/${accountId}/kbs`, { kb_id: 'team', title: 'Team' }));
    await expectAnswer('updateKnowledgeBase', 200, admin('PATCH', `/accounts/${accountId}/kbs/team`, { title: 'The team' }));
    const page = (id: string, links: string[]) => ({
      title: `Page ${id}`,
      summary: `About ${id}`,
      tags: ['guide'],
      links,
      body: `The ${id} page links to ${links.join(', ')}.`,
      source: { r2_key: 'sources/guide.txt', filename: 'guide.txt' },
    });
    await expectAnswer('putKnowledgePage', 201, admin('PUT', `/accounts/${accountId}/kbs/default/pages/alpha`, page('alpha', ['beta'])));
    await expectAnswer('putKnowledgePage', 200, admin('PUT', `/accounts/${accountId}/kbs/default/pages/alpha`, page('alpha', ['beta'])));
    await expectAnswer('putKnowledgePage', 201, admin('PUT', `/accounts/${accountId}/kbs/default/pages/beta`, page('beta', [])));
    await h.t.gateway.runner.catchUpToHead();
    const search = await expectAnswer('searchWiki', 200, client('GET', '/api/v1/ext/wiki/search?q=page'));
    expect(search.results.length).toBeGreaterThan(0);
    await expectAnswer('listWikiKbs', 200, client('GET', '/api/v1/ext/wiki/kbs'));
    await expectAnswer('listWikiTags', 200, client('GET', '/api/v1/ext/wiki/tags'));
    await expectAnswer('listWikiPagesByTag', 200, client('GET', '/api/v1/ext/wiki/tags/guide'));
    await expectAnswer('readWikiPages', 200, client('GET', '/api/v1/ext/wiki/pages?ids=alpha,nope'));
    await expectAnswer('readWikiPage', 200, client('GET', '/api/v1/ext/wiki/pages/alpha'));
    await expectAnswer('listWikiBacklinks', 200, client('GET', '/api/v1/ext/wiki/pages/beta/backlinks'));
    await expectAnswer('getWikiSource', 200, client('GET', '/api/v1/ext/wiki/pages/alpha/source'));
    const mcp = (body: unknown) => call('POST', '/mcp', body, { authorization: `Bearer ${key}`, accept: 'application/json, text/event-stream' });
    await expectAnswer('mcp', 200, mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    await expectAnswer('mcp', 200, mcp({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_page', arguments: { id: 'alpha' } } }));
    await expectAnswer('deleteKnowledgePage', 200, admin('DELETE', `/accounts/${accountId}/kbs/default/pages/beta`));
  });

  it('the operational endpoints: liveness, readiness and this description', async () => {
    await expectAnswer('getHealth', 200, call('GET', '/healthz'));
    await expectAnswer('getReadiness', 200, call('GET', '/readyz'));
    await expectAnswer('getOpenApiDocument', 200, call('GET', '/openapi.json'));
  });

  it("the operator's API: accounts, keys, ledger, call log, usage, channels, re-rates, console links", async () => {
    const account = await expectAnswer('createAccount', 201, admin('POST', '/accounts', { name: 'answers' }));
    const id = account.id as string;
    await expectAnswer('listAccounts', 200, admin('GET', '/accounts'));
    await expectAnswer('getAccount', 200, admin('GET', `/accounts/${id}`));
    await expectAnswer('topUpAccount', 201, admin('POST', `/accounts/${id}/topups`, { amount_usd: '500.00', reference: 'answers-1' }));
    await expectAnswer('setAccountLimits', 200, admin('PUT', `/accounts/${id}/limits`, { rpm: 100, concurrency: null }));
    await expectAnswer('setAccountGroup', 200, admin('PUT', `/accounts/${id}/group`, { group: 'default' }));
    await expectAnswer('deactivateAccount', 200, admin('POST', `/accounts/${id}/deactivate`, { reason: 'a test' }));
    await expectAnswer('reactivateAccount', 200, admin('POST', `/accounts/${id}/reactivate`));
    const created = await expectAnswer('createKey', 201, admin('POST', `/accounts/${id}/keys`, { name: 'k', spend_cap_usd: '5.00', allowed_models: [MODEL_OF.messages] }));
    await expectAnswer('listKeys', 200, admin('GET', `/accounts/${id}/keys`));
    await expectAnswer('updateKey', 200, admin('PATCH', `/keys/${created.id}`, { name: 'renamed' }));
    await expectAnswer('revealKey', 200, admin('GET', `/keys/${created.id}/reveal`));
    await expectAnswer('revokeKey', 200, admin('POST', `/keys/${created.id}/revoke`));
    await expectAnswer('deleteKey', 200, admin('DELETE', `/keys/${created.id}`));
    await expectAnswer('getAccountLedger', 200, admin('GET', `/accounts/${id}/ledger`));
    await h.t.gateway.ledger.idle();
    await h.t.gateway.runner.catchUpToHead();
    const logs = await expectAnswer('listAccountLogs', 200, admin('GET', `/accounts/${accountId}/logs?limit=200`));
    expect(logs.data.length).toBeGreaterThan(10);
    await expectAnswer('getAccountUsage', 200, admin('GET', `/accounts/${accountId}/usage`));
    await expectAnswer('createConsoleLoginLink', 201, admin('POST', `/accounts/${accountId}/login-link`));
    await expectAnswer('signUp', 200, call('POST', '/v1/accounts/sign-up', { email: 'answers@example.test', password: 'a password of the answers', name: 'Answers' }));
    const signups = await expectAnswer('listSignups', 200, admin('GET', '/signups'));
    expect(signups.data[0]).toMatchObject({ email: 'answers@example.test', verified_at: null, trial_granted: false });

    const channels = await expectAnswer('listChannels', 200, admin('GET', '/channels'));
    const channel = channels.data[0].id as string;
    await expectAnswer('disableChannel', 200, admin('POST', `/channels/${channel}/disable`, { reason: 'a test' }));
    await expectAnswer('enableChannel', 200, admin('POST', `/channels/${channel}/enable`));
    await expectAnswer('probeChannel', 200, admin('POST', `/channels/${channel}/probe`));
    await expectAnswer('reloadConfig', 200, admin('POST', '/config/reload'));

    const now = Math.floor(Date.now() / 1000);
    const rerate = await expectAnswer('rerate', 200, admin('POST', '/rerates', { model: MODEL_OF.messages, from: now - 3600, to: now + 60, price: { input: '2.00', output: '4.00' } }));
    expect(rerate.calls.length).toBeGreaterThan(0);
  });

  it("the operator's API: enterprises, members, agents, agent keys, key requests, the audit trail", async () => {
    const enterprise = (await admin('POST', '/accounts', { name: 'enterprise' })).body.id as string;
    const member = (await admin('POST', '/accounts', { name: 'member' })).body.id as string;
    const boss = (await admin('POST', '/accounts', { name: 'admin' })).body.id as string;
    await expectAnswer('configureEnterprise', 200, admin('PUT', `/accounts/${enterprise}/enterprise`, { allowed_models: [MODEL_OF['chat-completions']], default_model: MODEL_OF['chat-completions'] }));
    await expectAnswer('setEnterpriseMember', 200, admin('PUT', `/accounts/${enterprise}/members/${member}`, { role: 'member' }));
    await expectAnswer('setEnterpriseMember', 200, admin('PUT', `/accounts/${enterprise}/members/${boss}`, { role: 'admin' }));
    await expectAnswer('getEnterprise', 200, admin('GET', `/accounts/${enterprise}/enterprise`));
    await expectAnswer('listEnterpriseMembers', 200, admin('GET', `/accounts/${enterprise}/members`));
    const agent = await expectAnswer('createAgent', 201, admin('POST', `/accounts/${enterprise}/agents`, { name: 'helper', system_prompt: 'Be brief.', creator_account_id: member }));
    await expectAnswer('listAgents', 200, admin('GET', `/accounts/${enterprise}/agents`));
    await expectAnswer('getAgent', 200, admin('GET', `/agents/${agent.id}`));
    await expectAnswer('updateAgent', 200, admin('PATCH', `/agents/${agent.id}`, { temperature: 0.5 }));
    await expectAnswer('issueAgentKey', 201, admin('POST', `/agents/${agent.id}/keys`, { name: 'agent key', issued_by: boss }));
    await expectAnswer('listAgentKeys', 200, admin('GET', `/agents/${agent.id}/keys`));
    const asked = await expectAnswer('requestAgentKey', 201, admin('POST', `/agents/${agent.id}/key-requests`, { name: 'asked', requested_by: member, spend_cap_usd: '1.00' }));
    const refused = await expectAnswer('requestAgentKey', 201, admin('POST', `/agents/${agent.id}/key-requests`, { name: 'refused', requested_by: member, spend_cap_usd: '1.00' }));
    await expectAnswer('listKeyRequests', 200, admin('GET', `/accounts/${enterprise}/key-requests`));
    await expectAnswer('approveKeyRequest', 201, admin('POST', `/key-requests/${asked.id}/approve`, { approved_by: boss }));
    await expectAnswer('rejectKeyRequest', 200, admin('POST', `/key-requests/${refused.id}/reject`, { rejected_by: boss }));
    await h.t.gateway.runner.catchUpToHead();
    const audit = await expectAnswer('getAuditTrail', 200, admin('GET', `/accounts/${enterprise}/audit`));
    expect(audit.data.length).toBeGreaterThan(0);
    await expectAnswer('deleteAgent', 200, admin('DELETE', `/agents/${agent.id}`));
    await expectAnswer('removeEnterpriseMember', 200, admin('DELETE', `/accounts/${enterprise}/members/${member}`));
  });

  it('paid top-ups: checkout, payments, the webhook, the operator\'s payments, refunds and deliveries set aside', async () => {
    const opened = await expectAnswer('createCheckout', 201, client('POST', '/v1/billing/checkout', { amount_usd: '150.00' }));
    await expectAnswer('listPayments', 200, client('GET', '/v1/billing/payments'));
    const paid = stripe.signed(stripe.pay(opened.id));
    await expectAnswer('stripeWebhook', 200, call('POST', '/webhooks/stripe', paid.payload, { 'content-type': 'application/json', 'stripe-signature': paid.header }));
    await h.t.gateway.runner.catchUpToHead();
    await expectAnswer('listAllPayments', 200, admin('GET', '/payments'));
    await expectAnswer('refundPayment', 201, admin('POST', `/payments/${opened.id}/refunds`, { amount_usd: '10.00' }));
    await stripe.deliver(stripe.foreignSessionEvent(20_000), { url: `${h.baseUrl}/webhooks/stripe` });
    await h.t.gateway.runner.catchUpToHead();
    const aside = await expectAnswer('listPaymentWebhooks', 200, admin('GET', '/payments/webhooks'));
    expect(aside.data.length).toBe(1);
  });

  it('every answer the document names was checked against a real one', () => {
    for (const tag of ['chat', 'media', 'account', 'models', 'knowledge', 'admin-accounts', 'admin-keys', 'admin-knowledge', 'admin-billing', 'admin-enterprise', 'admin-channels']) {
      const ids = operations().filter(({ op }) => op.tags.includes(tag)).map(({ op }) => op.operationId as string);
      expect([...checked].some((c) => ids.includes(c.split(' ')[0]!)), tag).toBe(true);
    }
    expect(checked.size).toBeGreaterThan(80);
    const unchecked = Object.entries(OPERATION_ANSWERS).flatMap(([id, statuses]) => Object.keys(statuses).map((status) => `${id} ${status}`)).filter((c) => !checked.has(c));
    // An image task's first poll may already be its end (202 only while it runs); a ready gateway is not 503.
    expect(unchecked.filter((c) => c !== 'getImageTask 202' && c !== 'getReadiness 503')).toEqual([]);
  });
});
