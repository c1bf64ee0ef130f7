import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import type { Ledger } from '../../commands/ledger';
import type { ModelRegistry } from '../../config/registry';
import type { ModelConfig } from '../../config/schema';
import { min, parseUsd } from '../../money/usd';
import { zodMessage } from '../../upstream/protocols/chat-completions';
import {
  imagesAuthHeaders,
  imagesErrorMessage,
  imagesPath,
  imagesResult,
  imagesUpstreamBody,
  type ImageEndpoint,
  type ImageRequest,
  type UploadedImage,
} from '../../upstream/protocols/images';
import type { Route, Router } from '../../upstream/routing';
import { IMAGE_ANSWER_BYTES, textWithin } from '../../upstream/bounded-body';
import { postHop, type HopResult } from '../../upstream/hop';
import { tryJson } from '../../upstream/json';
import { CallSignal, upstreamTarget } from '../../upstream/upstream-call';
import { trackCall } from '../../lifecycle/http';
import { spendCapRefusal } from '../../commands/wallet/decider';
import { faultPoint } from '../../runtime/fault';
import { callableModel, callRecord, failureSummary, rejectCall, type CallFacts } from '../billable-call';
import { holdCall } from '../call-hold';
import { errorBody, GatewayError, requestTooLarge as tooLarge, type ErrorCode } from '../errors';
import { passedThrough, tryChannels } from '../channel-ladder';
import { releaseUnsettled } from '../hold-release';
import type { RouteDoc } from '../openapi/route-doc';
import { completeHijacked } from '../plugins/idempotency';
import { traceSettlement, type UpstreamAttempt } from '../../tracing/spans';

/** The spec's image timings: one upstream hop, the whole channel ladder, and when the
 * gateway commits to a 200 and keeps the connection alive. */
export interface ImageTimings {
  readonly hopMs: number;
  readonly ladderMs: number;
  readonly keepAliveAfterMs: number;
  /** Whitespace is written this often once the connection is kept alive. */
  readonly keepAliveEveryMs: number;
}

export const IMAGE_TIMINGS: ImageTimings = { hopMs: 240_000, ladderMs: 280_000, keepAliveAfterMs: 90_000, keepAliveEveryMs: 15_000 };

export interface ImagesDeps {
  readonly ledger: Ledger;
  readonly registry: ModelRegistry;
  readonly router: Router;
  readonly now: () => number;
  readonly timings?: Partial<ImageTimings>;
  readonly dispatcher?: Dispatcher;
}

/** 95 MB: the spec's limit on an edit's body, JSON or multipart. */
export const IMAGE_BODY_LIMIT = 95 * 1024 * 1024;
export const MAX_IMAGES = 10;
/** Hosted image links live 24 hours. */
const HOSTED_TTL_S = 24 * 3600;
const HOLD_GRACE_S = 120;

const References = z.union([z.string().min(1), z.array(z.string().min(1))]);
const ImageBody = z.looseObject({
  model: z.string().min(1),
  prompt: z.string().min(1),
  n: z.number().int().min(1).max(MAX_IMAGES, `must be at most ${MAX_IMAGES}`).optional(),
  size: z.string().optional(),
  image: References.optional(),
  image_urls: z.array(z.string().min(1)).optional(),
  response_format: z.enum(['url', 'b64_json']).optional(),
  async: z.boolean().optional(),
});

const imageDoc = (endpoint: ImageEndpoint): RouteDoc => ({
  operationId: endpoint === 'generations' ? 'createImage' : 'editImage',
  summary: endpoint === 'generations' ? 'Generate images' : 'Edit images (a reference image is required)',
  description:
    'Billed per image returned (reserved for n, or the fixed grid). After 90 s the gateway commits to a 200 and keeps the connection alive: a failure after that arrives as a 200 with an `error` body.',
  tags: ['media'],
  body: {
    json: ImageBody,
    ...(endpoint === 'edits'
      ? { multipart: { fields: ImageBody, files: { image: 'A reference image file (several: `image[]`).', mask: 'A mask, passed through.' } } }
      : {}),
  },
  responses: { 200: { description: 'The images: `created`, `data[]` of `{url | b64_json}`, `usage`; `expires_at` for hosted links.' } },
  errors: {
    502: 'No channel could be reached: `upstream_unreachable`.',
    503: 'The model has no image channel, or every channel failed: `no_channel_available`.',
    504: 'The call ran past its time limit: `upstream_timeout`.',
  },
});

/** Files of a multipart request, parsed before the idempotency hook fingerprints the request. */
const uploads = new WeakMap<FastifyRequest, UploadedImage[]>();

/** Multipart text fields as JSON values: `n` a number, `async` a boolean, `x[]` and repeated names arrays. */
async function readMultipart(request: FastifyRequest): Promise<{ fields: Record<string, unknown>; files: UploadedImage[] }> {
  try {
    return await readParts(request);
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    // The parser's refusals: a part over its limits, or a body that is not multipart at all.
    const { statusCode, code, message } = error as { statusCode?: number; code?: string; message?: string };
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(IMAGE_BODY_LIMIT);
    if (statusCode === 413) throw new GatewayError('request_too_large', `the multipart body has too many parts: ${message}`);
    throw new GatewayError('invalid_request', `the multipart body could not be read: ${message ?? 'malformed'}`);
  }
}

async function readParts(request: FastifyRequest): Promise<{ fields: Record<string, unknown>; files: UploadedImage[] }> {
  const fields: Record<string, unknown> = {};
  const files: UploadedImage[] = [];
  // The limit is on the whole body, counted as it arrives: no more than the limit is ever kept.
  let size = 0;
  const count = (bytes: number) => {
    size += bytes;
    if (size > IMAGE_BODY_LIMIT) throw tooLarge(IMAGE_BODY_LIMIT);
  };
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      const chunks: Buffer[] = [];
      for await (const chunk of part.file as AsyncIterable<Buffer>) {
        count(chunk.length);
        chunks.push(chunk);
      }
      files.push({ field: part.fieldname, filename: part.filename, mimetype: part.mimetype, data: Buffer.concat(chunks) });
      continue;
    }
    count(String(part.value).length);
    const many = part.fieldname.endsWith('[]');
    const name = many ? part.fieldname.slice(0, -2) : part.fieldname;
    let value: unknown = part.value;
    if (name === 'n' && typeof value === 'string' && /^\d+$/.test(value)) value = Number(value);
    if (name === 'async' && (value === 'true' || value === 'false')) value = value === 'true';
    const prior = fields[name];
    if (many || name === 'image_urls') fields[name] = [...(Array.isArray(prior) ? prior : prior === undefined ? [] : [prior]), value];
    else if (prior !== undefined) fields[name] = [...(Array.isArray(prior) ? prior : [prior]), value];
    else fields[name] = value;
  }
  return { fields, files };
}

/** `POST /v1/images/generations` and `/v1/images/edits`: synchronous, per image, idempotent. */
export function imageRoutes(deps: ImagesDeps) {
  const timings = { ...IMAGE_TIMINGS, ...deps.timings };
  return async (app: FastifyInstance) => {
    // One byte over the body's limit: the parser then hands readMultipart the byte that makes it
    // refuse, where at the limit it would stop the file silently and wait for its end.
    await app.register(multipart, { limits: { fileSize: IMAGE_BODY_LIMIT + 1, fieldSize: IMAGE_BODY_LIMIT + 1, files: 32, parts: 1000 } });
    for (const endpoint of ['generations', 'edits'] as const) {
      app.post(
        imagesPath(endpoint),
        {
          bodyLimit: IMAGE_BODY_LIMIT,
          config: {
            auth: 'key',
            shape: 'chat',
            trace: true,
            idempotent: true,
            mayReplay: (request: FastifyRequest) => replayRefusal(deps, endpoint, request),
            callLog: { endpoint: `images.${endpoint}`, unitType: 'image' },
            openapi: imageDoc(endpoint),
          },
          preValidation: async (request) => {
            if (!request.isMultipart()) return;
            const { fields, files } = await readMultipart(request);
            request.body = fields;
            uploads.set(request, files);
            request.idempotencyFingerprintParts = { fields, files: files.map((f) => ({ name: f.field, filename: f.filename, contentType: f.mimetype, data: f.data })) };
          },
        },
        (request, reply) => relayImages(deps, timings, endpoint, request, reply),
      );
    }
  };
}

function parseRequest(endpoint: ImageEndpoint, request: FastifyRequest): { body: z.infer<typeof ImageBody>; image: ImageRequest } | { invalid: string } {
  const files = uploads.get(request) ?? [];
  const parsed = ImageBody.safeParse(request.body ?? {});
  if (!parsed.success) return { invalid: zodMessage(parsed.error) };
  const body = parsed.data;
  if (body.async === true) return { invalid: 'async: true (submit and poll) is not available on this gateway yet; send the request without it for a synchronous answer' };
  const { image, image_urls, ...fields } = body;
  const references = [...(image === undefined ? [] : Array.isArray(image) ? image : [image]), ...(image_urls ?? [])];
  const referenceFiles = files.filter((f) => f.field === 'image' || f.field === 'image[]');
  if (endpoint === 'edits' && references.length === 0 && referenceFiles.length === 0)
    return { invalid: 'image: a reference image is required for an edit (file field `image` or `image[]`, or `image` / `image_urls` as URLs or data URIs)' };
  return { body, image: { endpoint, fields, references, files, multipart: request.isMultipart() } };
}

/**
 * Whether this key may receive a stored answer of this request (an Idempotency-Key replay): the
 * checks of the key a new call would meet, with the same error. The same key and body name the same
 * model, but another key of the account may be limited to other models or be near its spend cap.
 * The account's balance is not checked again: the call was paid when it ran (a balance of 0 or
 * below is refused at authentication anyway).
 */
function replayRefusal(deps: ImagesDeps, endpoint: ImageEndpoint, request: FastifyRequest): GatewayError | null {
  const caller = request.caller!;
  const parsed = parseRequest(endpoint, request);
  if ('invalid' in parsed) return null; // never stored: only successes are
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, parsed.body.model);
  if ('code' in model) return new GatewayError(model.code, model.message);
  const amount = parseUsd(model.price.per_image ?? '0') * BigInt(reservedImages(model, parsed.body.n ?? 1));
  const capped = spendCapRefusal(caller.wallet, caller.keyId, caller.key.settings.spend_cap, amount);
  return capped ? new GatewayError('quota_exceeded', capped.message) : null;
}

/** Units a request may produce: n, and for fixed-grid SKUs never fewer than the grid. */
export function reservedImages(model: ModelConfig, n: number): number {
  return model.fixed_grid ? Math.max(n, model.fixed_grid) : n;
}

/**
 * One synchronous image call: validate, resolve the model, hold unit price × images,
 * try up to three channels, settle on the images actually returned. Past the keep-alive
 * point the 200 is committed, so a later failure is written as a 200 with an `error` body.
 */
async function relayImages(deps: ImagesDeps, timings: ImageTimings, endpoint: ImageEndpoint, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const facts: CallFacts = {
    request,
    endpoint: `images.${endpoint}`,
    startedAt: performance.now(),
    submittedAt: deps.now(),
    model: String((request.body as { model?: unknown } | null)?.model ?? ''),
    attempts: 0,
    channelId: null,
  };
  const reject = (code: ErrorCode, message: string): never => rejectCall(deps.ledger, facts, code, message, { unit_type: 'image' });

  const parsed = parseRequest(endpoint, request);
  if ('invalid' in parsed) return reject('invalid_request', parsed.invalid);
  const { body, image } = parsed;
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, body.model);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  const routes: Route[] = model.kind === 'image' ? deps.router.routes(model.id, 'images') : [];
  if (routes.length === 0) return reject('no_channel_available', `The model \`${model.id}\` has no channel for image ${endpoint}.`);

  const unitPrice = parseUsd(model.price.per_image ?? '0');
  const units = reservedImages(model, body.n ?? 1);
  const holdId = await holdCall(
    deps.ledger,
    facts,
    { amount: unitPrice * BigInt(units), purpose: `images.${endpoint} ${model.id}`, ttlSeconds: Math.ceil(timings.ladderMs / 1000) + HOLD_GRACE_S },
    reject,
  );

  const call = new CallSignal(timings.ladderMs);
  // Known to the shutdown, which ends it if it outlasts the grace.
  const untrack = trackCall(request, call);
  const answer = new KeptAlive(request, reply, timings);
  // Set once the hold's settlement or release has been written: any failure before that (a
  // body or an answer the gateway cannot handle, a failed write) releases it, with its row.
  let closed = false;
  try {
    const outcome = await tryChannels({
      facts,
      routes,
      call,
      attempt: (route, traced) => send(deps, timings, route, image, call, traced),
      stopped: () => answer.clientGone,
    });
    if (outcome.ok) {
      const text = outcome.value;
      const result = imagesResult(tryJson(text));
      const billed = min(BigInt(result.count), BigInt(units));
      request.callMeter?.charge(unitPrice * billed);
      const expiresAt = result.expiresAt ?? (result.urls.length > 0 ? (result.created ?? deps.now()) + HOSTED_TTL_S : null);
      const record = callRecord(facts, {
        status: 'success',
        unit_count: result.count,
        unit_type: 'image',
        input_tokens: result.inputTokens,
        output_tokens: result.outputTokens,
        result_urls: [...result.urls],
        result_expires_at: expiresAt,
      });
      await traceSettlement(request, { holdId, amount: unitPrice * billed, record, attempt: outcome.traced }, () => deps.ledger.settle(caller.accountId, holdId, unitPrice * billed, record));
      closed = true;
      // Test seam (GATEWAY_FAULT): the process dies between the charge and the Idempotency-Key record.
      faultPoint('image-settled');
      return answer.send(200, withExpiry(text, result.expiresAt === null ? expiresAt : null));
    }
    const failure = outcome.failure;
    const release = async (code: string, message: string) => {
      const record = callRecord(facts, { status: 'error', error_code: code, error_message: message, unit_type: 'image' });
      await traceSettlement(request, { holdId, record }, () => deps.ledger.release(caller.accountId, holdId, 'upstream failed', record));
      closed = true;
    };
    if (answer.clientGone) {
      // Nobody is left to answer: no other channel is tried, nothing is billed. 499 (nginx's
      // "client closed the request") only ever reaches the access log.
      await release('client_disconnected', 'the client disconnected');
      return answer.send(499, JSON.stringify(errorBody('chat', new GatewayError('upstream_unreachable', 'the client disconnected'))));
    }
    const f = failure ?? { kind: 'unreachable' as const, message: 'no channel could be reached' };
    const { status, code, message } = failureSummary(f, imagesErrorMessage);
    await release(code, message);
    if (f.kind === 'status') {
      if (f.headers['retry-after']) reply.header('retry-after', f.headers['retry-after']);
      return answer.send(status, passedThrough(f, message));
    }
    const error = new GatewayError(code as ErrorCode, message);
    if (answer.committed) return answer.send(error.status, JSON.stringify(errorBody('chat', error)));
    throw error;
  } catch (error) {
    if (!closed) await releaseUnsettled(deps.ledger, facts, holdId, error, { unit_type: 'image' });
    if (!answer.committed) throw error;
    request.log.error({ err: error }, 'image call failed after the keep-alive began');
    return answer.send(500, JSON.stringify(errorBody('chat', new GatewayError('internal_error', `internal error; the request id is ${request.id}`))));
  } finally {
    call.clear();
    answer.stop();
    untrack();
  }
}

/** The upstream answer with the gateway's `expires_at` for hosted links, next to `created`. */
function withExpiry(text: string, expiresAt: number | null): string {
  if (expiresAt === null) return text;
  const json = tryJson(text);
  if (!json || typeof json !== 'object' || Array.isArray(json)) return text;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(json)) {
    out[k] = v;
    if (k === 'created') out.expires_at = expiresAt;
  }
  if (!('expires_at' in out)) out.expires_at = expiresAt;
  return JSON.stringify(out);
}

function send(deps: ImagesDeps, timings: ImageTimings, route: Route, image: ImageRequest, call: CallSignal, traced: UpstreamAttempt | null): Promise<HopResult<string>> {
  // Built before the hop: a fault of the gateway's own is a 500 with its hold released, not an upstream failure.
  const { body, contentType } = imagesUpstreamBody(image, route.upstreamModel);
  const target = upstreamTarget(route.channel.base_url, imagesPath(image.endpoint));
  const headers: Record<string, string> = { ...(contentType ? { 'content-type': contentType } : {}), ...imagesAuthHeaders(route.channel.api_key) };
  traced?.propagate(headers);
  return postHop({ target, headers, body, timeoutMs: timings.hopMs, call, dispatcher: deps.dispatcher, onStatus: (status) => traced?.answered(status) }, (response) =>
    textWithin(response.body, IMAGE_ANSWER_BYTES),
  );
}

/**
 * The answer of a slow image call. Until the keep-alive point it is an ordinary reply; after
 * it the status line (200) and headers are out and whitespace keeps the connection open
 * (JSON allows leading whitespace), so the final body — answer or `error` — follows as is.
 */
class KeptAlive {
  committed = false;
  clientGone = false;
  private readonly startTimer: NodeJS.Timeout;
  private ticker: NodeJS.Timeout | null = null;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    timings: ImageTimings,
  ) {
    const raw = reply.raw;
    raw.once('close', () => {
      if (!raw.writableFinished) this.clientGone = true;
    });
    this.startTimer = setTimeout(() => {
      if (this.clientGone) return;
      this.committed = true;
      reply.hijack();
      // The headers set so far come along: x-gateway-trace (every media answer), x-ratelimit-*.
      raw.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), 'content-type': 'application/json' });
      raw.write(' ');
      this.ticker = setInterval(() => raw.write(' '), timings.keepAliveEveryMs);
    }, timings.keepAliveAfterMs);
  }

  async send(status: number, body: string): Promise<FastifyReply> {
    this.stop();
    if (!this.committed) return this.reply.code(status).type('application/json').send(body);
    const raw = this.reply.raw;
    // Recorded before the last byte leaves, as the plugin's onSend does for ordinary replies: a
    // client that retries at once finds the answer (or the key free), never the call in flight.
    // The status line said 200 whatever happened: only a real success is worth remembering.
    await completeHijacked(this.request, status < 300 ? 200 : status, 'application/json', body);
    if (!this.clientGone) raw.end(body);
    return this.reply;
  }

  stop() {
    clearTimeout(this.startTimer);
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
  }
}
