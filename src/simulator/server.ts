/** The simulator's HTTP server: routing, recording, scenario selection, then the protocol handlers. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { asRecord } from './conversation';
import { googleKeyInvalid, vendorError } from './errors';
import { sendFile } from './files';
import { pad, parseMultipart, readBody, sendJson, sleep, type Ctx, type SimState } from './http';
import { chatMarkerText, handleChat } from './protocols/chat-completions';
import { generateMarkerText, handleGenerate } from './protocols/generate-content';
import { handleImages } from './protocols/images';
import { handleMessages, messagesMarkerText } from './protocols/messages';
import { handleResponses, responsesMarkerText } from './protocols/responses';
import { handleSpeech, handleVoiceCreate } from './protocols/speech';
import { handleClipTemplates } from './protocols/clip';
import { handleTaskDelete, handleTaskGet, handleTaskSubmit, taskProtocol, type Task } from './protocols/tasks';
import { promptTokens } from './tokens';
import { deepStrings, markersIn, normalizeEntry, ScenarioError, toScenarioSet } from './scenarios';
import type { Protocol, RecordedRequest, Scenario, ScenarioFilter, ScenarioSet, Simulator, SimulatorOptions } from './types';

type Route =
  | { kind: 'chat' | 'responses' | 'messages' | 'images-generations' | 'images-edits' | 'task-submit' | 'speech' | 'voices'; protocol: Protocol }
  | { kind: 'generate'; protocol: Protocol; model: string; stream: boolean }
  | { kind: 'count-tokens'; protocol: Protocol }
  | { kind: 'models'; protocol: Protocol }
  | { kind: 'task-get' | 'task-delete'; protocol: Protocol; id: string }
  | { kind: 'clip-templates'; protocol: Protocol; id: string | undefined }
  | { kind: 'file'; name: string }
  | { kind: 'health' };

const GENERATE_RE = /\/(?:v1beta|v1alpha|v1)\/models\/([^/]+):(generateContent|streamGenerateContent)$/;
const COUNT_TOKENS_RE = /\/(?:v1beta|v1alpha|v1)\/models\/([^/]+):countTokens$/;
const TASKS_RE = /\/api\/v3\/contents\/generations\/tasks(?:\/([^/]+))?$/;
const CLIP_TEMPLATES_RE = /\/api\/v3\/clip-templates(?:\/([^/]+))?$/;

/**
 * Endpoints match by suffix, so a channel base_url may carry a path prefix (`${sim.url}/channel-a`).
 * The tasks endpoint serves several families: its protocol comes from the body or the task named.
 */
function route(method: string, path: string, body: unknown, tasks: ReadonlyMap<string, Task>): Route | undefined {
  if (method === 'GET' && path === '/health') return { kind: 'health' };
  if (method === 'GET' && path.startsWith('/files/')) return { kind: 'file', name: path.slice('/files/'.length) };
  const t = TASKS_RE.exec(path);
  if (t) {
    const id = t[1] === undefined ? undefined : decodeURIComponent(t[1]);
    const protocol = taskProtocol(body, id, tasks);
    if (method === 'POST' && id === undefined) return { kind: 'task-submit', protocol };
    if (method === 'GET' && id !== undefined) return { kind: 'task-get', protocol, id };
    if (method === 'DELETE' && id !== undefined) return { kind: 'task-delete', protocol, id };
    return undefined;
  }
  const c = CLIP_TEMPLATES_RE.exec(path);
  if (c && method === 'GET') return { kind: 'clip-templates', protocol: 'videos', id: c[1] === undefined ? undefined : decodeURIComponent(c[1]) };
  // OpenAI's model list: what the gateway's probes of images and speech channels ask (authenticated, free).
  if (method === 'GET' && path.endsWith('/v1/models')) return { kind: 'models', protocol: 'chat-completions' };
  if (method !== 'POST') return undefined;
  if (path.endsWith('/v1/chat/completions')) return { kind: 'chat', protocol: 'chat-completions' };
  if (path.endsWith('/v1/responses')) return { kind: 'responses', protocol: 'responses' };
  if (path.endsWith('/v1/messages')) return { kind: 'messages', protocol: 'messages' };
  if (path.endsWith('/v1/messages/count_tokens')) return { kind: 'count-tokens', protocol: 'messages' };
  if (COUNT_TOKENS_RE.test(path)) return { kind: 'count-tokens', protocol: 'generate-content' };
  if (path.endsWith('/v1/images/generations')) return { kind: 'images-generations', protocol: 'images' };
  if (path.endsWith('/v1/images/edits')) return { kind: 'images-edits', protocol: 'images' };
  if (path.endsWith('/v1/audio/speech')) return { kind: 'speech', protocol: 'speech' };
  if (path.endsWith('/v1/audio/voices')) return { kind: 'voices', protocol: 'speech' };
  const gen = GENERATE_RE.exec(path);
  if (gen) {
    return { kind: 'generate', protocol: 'generate-content', model: decodeURIComponent(gen[1]!), stream: gen[2] === 'streamGenerateContent' };
  }
  return undefined;
}

function apiKeyOf(req: IncomingMessage, url: URL): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, '').trim() || undefined;
  for (const h of ['x-api-key', 'x-goog-api-key', 'api-key']) {
    const v = req.headers[h];
    if (typeof v === 'string' && v !== '') return v;
  }
  return url.searchParams.get('key') ?? undefined;
}

function markerText(r: Route, body: unknown): string {
  switch (r.kind) {
    case 'chat':
      return chatMarkerText(body);
    case 'responses':
      return responsesMarkerText(body);
    case 'messages':
      return messagesMarkerText(body);
    case 'generate':
      return generateMarkerText(body);
    case 'images-generations':
    case 'images-edits': {
      const p = asRecord(body).prompt;
      return typeof p === 'string' ? p : '';
    }
    case 'speech': {
      const input = asRecord(body).input;
      return typeof input === 'string' ? input : '';
    }
    // a task's text may sit in any field (a music prompt, a transcript url, a video text item)
    case 'task-submit':
    case 'voices':
      return deepStrings(body).join('\n');
    default:
      return '';
  }
}

interface Queued {
  readonly filter: ScenarioFilter | undefined;
  readonly names: readonly string[];
}

function matches(f: ScenarioFilter | undefined, protocol: Protocol, model: string | undefined, apiKey: string | undefined, path: string): boolean {
  if (!f) return true;
  return (
    (f.protocol === undefined || f.protocol === protocol) &&
    (f.model === undefined || f.model === model) &&
    (f.apiKey === undefined || f.apiKey === apiKey) &&
    (f.pathPrefix === undefined || path.startsWith(f.pathPrefix))
  );
}

/** Starts the upstream simulator on 127.0.0.1 (an ephemeral port unless `port` is given). */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? '127.0.0.1';
  const requests: RecordedRequest[] = [];
  const queue: Queued[] = [];
  const lifetime = new AbortController();
  const state: SimState = { baseUrl: '', anthropicCacheSeen: new Set(), tasks: new Map(), voices: new Map() };
  const revoked = new Set<string>();
  let seq = 0;

  const take = (protocol: Protocol, model: string | undefined, apiKey: string | undefined, path: string): readonly string[] => {
    const i = queue.findIndex((q) => matches(q.filter, protocol, model, apiKey, path));
    if (i === -1) return [];
    return queue.splice(i, 1)[0]!.names;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator.invalid');
    const method = req.method ?? 'GET';
    const path = url.pathname;
    const raw = await readBody(req);
    const contentType = String(req.headers['content-type'] ?? '');
    let body: unknown;
    let badJson = false;
    if (raw.length > 0) {
      if (contentType.toLowerCase().startsWith('multipart/form-data')) body = parseMultipart(raw, contentType);
      else {
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          body = raw.toString('utf8');
          badJson = true;
        }
      }
    }
    const r = route(method, path, body, state.tasks);
    const protocol = r && 'protocol' in r ? r.protocol : undefined;
    const model = r?.kind === 'generate' ? r.model : typeof asRecord(body).model === 'string' ? (asRecord(body).model as string) : undefined;
    const apiKey = apiKeyOf(req, url);
    const stream = r?.kind === 'generate' ? r.stream : asRecord(body).stream === true;
    const n = ++seq;

    let names: string[] = [];
    let scenarioError: string | undefined;
    if (r && protocol) {
      names = [...take(protocol, model, apiKey, path)];
      const markers = badJson ? [] : markersIn(markerText(r, body));
      try {
        toScenarioSet(markers);
        names.push(...markers);
      } catch (e) {
        scenarioError = e instanceof ScenarioError ? e.message : String(e);
      }
    }
    requests.push({
      seq: n,
      method,
      path,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
      protocol,
      model,
      apiKey,
      scenarios: names,
      stream,
      at: Date.now(),
    });
    const scenario: ScenarioSet = toScenarioSet(names);
    const headers: Record<string, string> =
      protocol === 'messages' ? { 'request-id': `req_sim${pad(n)}` } : protocol === 'generate-content' ? {} : { 'x-request-id': `req_sim${pad(n)}` };
    const ctx: Ctx = { req, res, url, body, model, scenario, seq: n, sim: state, signal: lifetime.signal, headers };

    if (scenario.hang) return; // never answer; close() or the client ends it
    if (scenario.reset) {
      req.socket.destroy();
      return;
    }
    if (scenario.firstByteMs) await sleep(scenario.firstByteMs, lifetime.signal);
    if (lifetime.signal.aborted || res.destroyed) return;

    if (!r) return sendJson(ctx, 404, { error: { message: `simulator: no route for ${method} ${path}`, type: 'invalid_request_error', param: null, code: null } });
    if (r.kind === 'health') return sendJson(ctx, 200, { ok: true });
    if (r.kind === 'file') return sendFile(res, r.name);
    const p = r.protocol;
    const fail = (status: number, message?: string): void => {
      const e = vendorError(p, status, message, `req_sim${pad(n)}`);
      sendJson(ctx, e.status, e.body, e.headers, p === 'generate-content' ? 'application/json; charset=UTF-8' : 'application/json');
    };
    if (scenarioError) return fail(400, `simulator: ${scenarioError}`);
    if (badJson) return fail(400, 'We could not parse the JSON body of your request.');
    if (!apiKey) {
      if (p === 'generate-content') return fail(403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.");
      if (p === 'messages') return fail(401, 'x-api-key header is required');
      return fail(401, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).");
    }
    if (apiKey.includes('invalid') || revoked.has(apiKey)) {
      if (p === 'generate-content') {
        const e = googleKeyInvalid();
        return sendJson(ctx, e.status, e.body, e.headers, 'application/json; charset=UTF-8');
      }
      return fail(401);
    }
    if (scenario.status !== undefined) return fail(scenario.status);

    switch (r.kind) {
      case 'chat':
        return handleChat(ctx);
      case 'responses':
        return handleResponses(ctx);
      case 'messages':
        return handleMessages(ctx);
      case 'generate':
        return handleGenerate(ctx, r.stream);
      case 'images-generations':
        return handleImages(ctx, false);
      case 'images-edits':
        return handleImages(ctx, true);
      case 'task-submit':
        return handleTaskSubmit(ctx);
      case 'task-get':
        return handleTaskGet(ctx, r.id);
      case 'task-delete':
        return handleTaskDelete(ctx, r.id);
      case 'clip-templates':
        return handleClipTemplates(ctx, r.id);
      case 'speech':
        return handleSpeech(ctx);
      case 'voices':
        return handleVoiceCreate(ctx);
      case 'models':
        return sendJson(ctx, 200, { object: 'list', data: [] });
      case 'count-tokens': {
        // The prompt's tokens as a call would report them (Gemini's body may wrap the request).
        if (p === 'messages') return sendJson(ctx, 200, { input_tokens: promptTokens('messages', ctx.body) });
        const inner = asRecord(ctx.body).generateContentRequest ?? ctx.body;
        return sendJson(ctx, 200, { totalTokens: promptTokens('generate-content', inner) });
      }
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent || res.destroyed) {
        res.destroy();
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `simulator: ${message}`, type: 'server_error', param: null, code: null } }));
    });
  });
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;
  state.baseUrl = url;

  const enqueueFor = (filter: ScenarioFilter | undefined, entries: Array<Scenario | readonly Scenario[]>): void => {
    const normalized = entries.map(normalizeEntry); // validate all before queueing any
    for (const names of normalized) queue.push({ filter, names });
  };

  return {
    url,
    port,
    requests,
    enqueue: (...scenarios) => enqueueFor(undefined, scenarios),
    enqueueFor: (filter, ...scenarios) => enqueueFor(filter, scenarios),
    revokeKey(key, revokedNow = true) {
      if (revokedNow) revoked.add(key);
      else revoked.delete(key);
    },
    reset() {
      requests.length = 0;
      revoked.clear();
      queue.length = 0;
      state.anthropicCacheSeen.clear();
      state.tasks.clear();
      state.voices.clear();
      seq = 0;
    },
    close() {
      return new Promise<void>((resolve) => {
        lifetime.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
