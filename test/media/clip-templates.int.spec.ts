import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { NO_MEDIA_PROBE } from '../../src/media-check/port';
import { CLIP_TEMPLATES, type Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { api, ledgerEvents, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

// GET /v1/videos/clip-templates and /{id}: the upstream's templates through the gateway's 10-minute cache,
// free, for keys allowed a clip-* model (Errors, rule 8: 403 model_not_allowed).

const CLIP_MODELS = ['clip-realman', 'clip-mixcut', 'clip-news'];

function config(sim: Simulator): GatewayConfig {
  return {
    models: [
      mediaModel({ id: 'clip-realman', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-realman', resolution_required: false, video_mode: false, token_billing: false } }),
      mediaModel({ id: 'clip-mixcut', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-mixcut', resolution_required: false, video_mode: false, token_billing: false } }),
      mediaModel({ id: 'clip-news', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-news', resolution_required: false, video_mode: false, token_billing: false } }),
      mediaModel({ id: 'clip-orphan', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-news', resolution_required: false, video_mode: false, token_billing: false } }),
      mediaModel({ id: 'vid-plain', kind: 'video', price: { per_second: '0.10' } }),
    ],
    channels: [mediaChannel(sim, 'clip-a', 'videos', CLIP_MODELS, 0), mediaChannel(sim, 'clip-b', 'videos', CLIP_MODELS, 1), mediaChannel(sim, 'vid-a', 'videos', ['vid-plain'], 0)],
  };
}

/** The gateway's clock runs with real time, plus whatever a test moves it on by; a test may stop it. */
let skewS = 0;
let stoppedAt: number | null = null;
const clock = () => stoppedAt ?? Math.floor(Date.now() / 1000) + skewS;
let h: SimulatedGateway;
let http: ReturnType<typeof api>;
beforeAll(async () => {
  h = await startTaskHarness(config, { mediaProbe: NO_MEDIA_PROBE, now: clock });
  http = api(h);
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());
// A stopped clock runs on from where it stood.
afterEach(() => {
  if (stoppedAt !== null) skewS = stoppedAt - Math.floor(Date.now() / 1000);
  stoppedAt = null;
});

const templateFetches = () => h.sim.requests.filter((r) => r.method === 'GET' && r.path.includes('/api/v3/clip-templates'));
const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string; type: string; message: string } }).error;

describe('GET /v1/videos/clip-templates', () => {
  it.each(['virtualman', 'realMan', 'oralMixCutting', 'newsMixCutting'])('lists the %s templates as the upstream gives them, from the first channel', async (scene) => {
    const { key } = await h.t.accountWithKey();
    skewS += 3600; // a cold cache for this scene
    const response = await http.get(`/v1/videos/clip-templates?scene=${scene}`, key);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const body = (await response.json()) as { templates: Array<Record<string, unknown>> };
    expect(body.templates.map((t) => t.id)).toEqual(CLIP_TEMPLATES[scene]!.map((t) => t.id));
    for (const t of body.templates) expect(Object.keys(t).sort()).toEqual(['cover_url', 'has_persona', 'has_title', 'id', 'title']);
    expect(body.templates.some((t) => t.has_title === false || t.has_persona === false)).toBe(true);
    const [fetch] = templateFetches();
    expect(fetch).toMatchObject({ path: '/clip-a/api/v3/clip-templates', query: { scene }, apiKey: 'key-clip-a' });
  });

  it.each([
    ['', 'none'],
    ['?scene=', '""'],
    ['?scene=realman', '"realman"'],
    ['?scene=landscape', '"landscape"'],
  ])('refuses a missing or unknown scene (%s) with 400 invalid_request, asking no upstream', async (query, shown) => {
    const { key } = await h.t.accountWithKey();
    const response = await http.get(`/v1/videos/clip-templates${query}`, key);
    expect(response.status).toBe(400);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const error = await errorOf(response);
    expect(error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    expect(error.message).toBe(`scene: must be one of virtualman, realMan, oralMixCutting, newsMixCutting; got ${shown}`);
    expect(templateFetches()).toHaveLength(0);
  });

  it('gives one template with its canvas and layers; an unknown id is 404 not_found', async () => {
    const { key } = await h.t.accountWithKey();
    const response = await http.get('/v1/videos/clip-templates/rm-bare', key);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const template = (await response.json()) as Record<string, unknown>;
    expect(template).toMatchObject({ id: 'rm-bare', has_title: false, has_persona: true, scene: 'realMan', canvas: { width: 1080, height: 1920 } });
    const layers = (template.layers as Array<{ id: string }>).map((l) => l.id);
    expect(layers).toContain('persona');
    expect(layers).not.toContain('title');

    const missing = await http.get('/v1/videos/clip-templates/no-such-template', key);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(await errorOf(missing)).toMatchObject({ code: 'not_found', message: 'No clip template with id "no-such-template".' });
  });

  it('is only for keys allowed a clip-* model: 403 model_not_allowed otherwise, on both endpoints', async () => {
    const { accountId } = await h.t.accountWithKey();
    const key = async (allowed: string[]) => ((await h.t.admin('POST', `/accounts/${accountId}/keys`, { name: 'k', allowed_models: allowed })).json() as { key: string }).key;
    const plain = await key(['vid-plain']);
    for (const path of ['/v1/videos/clip-templates?scene=realMan', '/v1/videos/clip-templates/rm-talk']) {
      const response = await http.get(path, plain);
      expect(response.status).toBe(403);
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
      expect(await errorOf(response)).toMatchObject({ code: 'model_not_allowed', type: 'invalid_request_error' });
    }
    expect(templateFetches()).toHaveLength(0);
    // One clip model is enough, whichever scene is asked for.
    const newsOnly = await key(['clip-news']);
    expect((await http.get('/v1/videos/clip-templates?scene=realMan', newsOnly)).status).toBe(200);
    // A clip model no channel serves: 503.
    const orphan = await key(['clip-orphan']);
    const unserved = await http.get('/v1/videos/clip-templates?scene=realMan', orphan);
    expect(unserved.status).toBe(503);
    expect(await errorOf(unserved)).toMatchObject({ code: 'no_channel_available' });
  });

  it('answers 401 without a key, with x-gateway-trace', async () => {
    const response = await fetch(`${h.baseUrl}/v1/videos/clip-templates?scene=realMan`);
    expect(response.status).toBe(401);
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
  });

  it('is free: no ledger entry, no call-log row, the balance untouched', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const before = await ledgerEvents(h, accountId);
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect((await http.get('/v1/videos/clip-templates?scene=newsMixCutting', key)).status).toBe(200);
    expect((await http.get('/v1/videos/clip-templates/news-daily', key)).status).toBe(200);
    expect((await http.get('/v1/videos/clip-templates/nope', key)).status).toBe(404);
    expect(await ledgerEvents(h, accountId)).toEqual(before);
    expect(await logRows(h, accountId)).toEqual([]);
    expect(await h.t.gateway.ledger.wallet(accountId)).toEqual(wallet);
  });
});

describe('the template cache', () => {
  it('asks the upstream once within 10 minutes, and again after', async () => {
    const { key } = await h.t.accountWithKey();
    skewS += 3600;
    // Stopped, so that a real second passing does not move it past the edge being tested.
    stoppedAt = clock();
    const list = () => http.get('/v1/videos/clip-templates?scene=oralMixCutting', key);
    const one = () => http.get('/v1/videos/clip-templates/mix-promo', key);
    expect((await list()).status).toBe(200);
    expect((await one()).status).toBe(200);
    expect(templateFetches()).toHaveLength(2);
    stoppedAt += 599;
    const cached = (await (await list()).json()) as { templates: unknown[] };
    expect(cached.templates).toHaveLength(CLIP_TEMPLATES.oralMixCutting!.length);
    expect((await one()).status).toBe(200);
    expect(templateFetches()).toHaveLength(2);
    stoppedAt += 1;
    expect((await list()).status).toBe(200);
    expect((await one()).status).toBe(200);
    expect(templateFetches()).toHaveLength(4);
  });

  it('shares one upstream fetch among concurrent misses', async () => {
    const { key } = await h.t.accountWithKey();
    skewS += 3600;
    // The upstream is slow to answer, so every request arrives while the first fetch is in flight.
    h.sim.enqueue('slow_first_byte:300');
    const answers = await Promise.all(Array.from({ length: 6 }, () => http.get('/v1/videos/clip-templates?scene=virtualman', key)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(templateFetches()).toHaveLength(1);
  });

  it('does not keep a 404 or a failure; a 5xx of the first channel goes to the next', async () => {
    const { key } = await h.t.accountWithKey();
    skewS += 3600;
    expect((await http.get('/v1/videos/clip-templates/ghost', key)).status).toBe(404);
    expect((await http.get('/v1/videos/clip-templates/ghost', key)).status).toBe(404);
    expect(templateFetches()).toHaveLength(2);

    h.sim.reset();
    h.sim.enqueueFor({ pathPrefix: '/clip-a/' }, 'http_500');
    const response = await http.get('/v1/videos/clip-templates?scene=newsMixCutting', key);
    expect(response.status).toBe(200);
    expect(templateFetches().map((r) => r.path)).toEqual(['/clip-a/api/v3/clip-templates', '/clip-b/api/v3/clip-templates']);
    // The second channel's answer is kept under its own name; the first is asked again next time.
    expect((await http.get('/v1/videos/clip-templates?scene=newsMixCutting', key)).status).toBe(200);
    expect(templateFetches()).toHaveLength(3);
  });

  it('passes an upstream 4xx through with its status and message (Errors, rule 5)', async () => {
    const { key } = await h.t.accountWithKey();
    skewS += 3600;
    h.sim.enqueueFor({ pathPrefix: '/clip-a/' }, 'http_429');
    const response = await http.get('/v1/videos/clip-templates?scene=realMan', key);
    expect(response.status).toBe(429);
    expect(await errorOf(response)).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(templateFetches()).toHaveLength(1);
  });

  it("records a lookup's outcome on the channel: credentials refused (a probe confirming it) disable it, and it is skipped until enabled", async () => {
    const { key } = await h.t.accountWithKey();
    skewS += 3600;
    h.sim.reset();
    h.sim.revokeKey('key-clip-a');
    expect((await http.get('/v1/videos/clip-templates?scene=oralMixCutting', key)).status).toBe(200);
    const channelOf = async (id: string) => ((await h.t.admin('GET', '/channels')).json() as { data: Array<{ id: string; status: string; disabled_by: string | null }> }).data.find((c) => c.id === id)!;
    // The lookup's 401 asked for a probe of the channel (a GET of an unknown task), refused too.
    await expect.poll(() => channelOf('clip-a')).toMatchObject({ status: 'disabled', disabled_by: 'credentials' });
    expect(h.sim.requests.some((r) => r.method === 'GET' && r.path.startsWith('/clip-a/api/v3/contents/generations/tasks/'))).toBe(true);
    skewS += 3600;
    expect((await http.get('/v1/videos/clip-templates?scene=oralMixCutting', key)).status).toBe(200);
    expect(templateFetches().map((r) => r.path)).toEqual(['/clip-a/api/v3/clip-templates', '/clip-b/api/v3/clip-templates', '/clip-b/api/v3/clip-templates']);
    h.sim.revokeKey('key-clip-a', false);
    expect((await h.t.admin('POST', '/channels/clip-a/enable')).statusCode).toBe(200);
  });
});
