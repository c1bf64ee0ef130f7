import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import type { Dispatcher } from 'undici';
import { min } from '../../../money/usd';
import { urlRefusal } from '../../../media-check/checks';
import type { UrlProbe } from '../../../media-check/port';
import { imagesPath, type ImageEndpoint } from '../../../upstream/protocols/images';
import { CallSignal } from '../../../upstream/upstream-call';
import { trackCall } from '../../plugins/lifecycle';
import { faultPoint } from '../../../lifecycle/fault';
import { callRecord } from '../../billable-call';
import { holdCall } from '../../call-hold';
import { errorBody, failureOf, GatewayError } from '../../errors';
import { releaseFailed, releaseUnsettled } from '../../hold-release';
import type { RouteDoc } from '../../openapi/route-doc';
import { completeHijacked } from '../../plugins/idempotency';
import { traceSettlement } from '../../../tracing/spans';
import { IMAGE_TIMINGS, imageAnswer, runImageLadder, type ImageTimings } from './image-ladder';
import { IMAGE_BODY_LIMIT, IMAGE_JSON_LIMITS } from '../../intake/body-classes';
import { ImageBody, imageReplayRefusal, takeImageCall, takeMultipart, type ImageCall, type ImageIntakeDeps } from './image-request';
import { imageTaskRoutes, submitImageTask, type ImageTaskDeps } from './image-tasks';
import { sweepStaleUploads } from './image-uploads';
import { UploadBudget } from './upload-budget';
import { DEFAULT_UPLOAD_SPOOL_LIMIT_MB } from './upload-settings';

export { IMAGE_TIMINGS, type ImageTimings };

export interface ImagesDeps extends ImageIntakeDeps, Omit<ImageTaskDeps, 'timings' | 'dispatcher'> {
  /** Where multipart files wait on disk while their call runs (DATA_DIR/uploads): image-uploads.ts. */
  readonly uploadsDir: string;
  /** The most bytes those files may take in all (UPLOAD_SPOOL_LIMIT_MB); one account at most half. */
  readonly uploadSpoolLimit?: number;
  readonly timings?: Partial<ImageTimings>;
  readonly dispatcher?: Dispatcher;
  /** The URL policy on reference links (src/media-check/url-policy.ts). */
  readonly mediaProbe?: UrlProbe;
}

const HOLD_GRACE_S = 120;

const imageDoc = (endpoint: ImageEndpoint): RouteDoc => ({
  operationId: endpoint === 'generations' ? 'createImage' : 'editImage',
  summary: endpoint === 'generations' ? 'Generate images' : 'Edit images (a reference image is required)',
  description:
    'Billed per image returned (reserved for n, or the fixed grid). Synchronous by default: after 90 s the gateway commits to a 200 and keeps the connection alive, so a failure after that arrives as a 200 with an `error` body. With `async: true` (multipart: the field `async=true`) the same checks run (400, 402, 503 are real), then the answer is at once `{id, status: queued, model, created_at}` and the call runs as a task: poll `GET /v1/images/generations/{id}`.',
  tags: ['media'],
  body: {
    json: ImageBody,
    ...(endpoint === 'edits'
      ? { multipart: { fields: ImageBody, files: { image: 'A reference image file (several: `image[]`).', mask: 'A mask, passed through.' } } }
      : {}),
  },
  responses: {
    200: {
      description:
        'The images: `created`, `data[]` of `{url | b64_json}`, `usage`; `expires_at` for hosted links. With `async: true`: `{id, status: queued, model, created_at}`.',
    },
  },
  errors: {
    502: 'No channel could be reached: `upstream_unreachable`.',
    503: 'The model has no image channel, or every channel failed: `no_channel_available`. A multipart upload past the gateway\'s upload space (UPLOAD_SPOOL_LIMIT_MB, one account at most half): `service_unavailable`, with `Retry-After`.',
    504: 'The call ran past its time limit: `upstream_timeout`.',
  },
});

/** `POST /v1/images/generations` and `/v1/images/edits` (synchronous, or `async: true` for a task),
 * per image, idempotent; and the task routes of the asynchronous mode. */
export function imageRoutes(deps: ImagesDeps) {
  const timings = { ...IMAGE_TIMINGS, ...deps.timings };
  const taskDeps: ImageTaskDeps = { ...deps, timings };
  const spoolBudget = new UploadBudget(deps.uploadSpoolLimit ?? DEFAULT_UPLOAD_SPOOL_LIMIT_MB * 1024 * 1024);
  return async (app: FastifyInstance) => {
    // One byte over the body's limit: the parser then hands readMultipart the byte that makes it
    // refuse, where at the limit it would stop the file silently and wait for its end.
    // A text field is what a JSON string is (a prompt, a data-URI reference; the parser JSON-parses a part
    // sent as application/json): bounded as one, 8 MB. Image bytes go as file parts, up to 95 MB.
    await app.register(multipart, { limits: { fileSize: IMAGE_BODY_LIMIT + 1, fieldSize: IMAGE_JSON_LIMITS.string, files: 32, parts: 1000 } });
    // What a process that stopped abruptly left behind (its requests' files); not worth refusing to start over.
    await sweepStaleUploads(deps.uploadsDir).catch((error: unknown) => app.log.warn({ err: error, dir: deps.uploadsDir }, 'stale uploads could not be swept'));
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
            mayReplay: (request: FastifyRequest) => imageReplayRefusal(deps, endpoint, request),
            callLog: { endpoint: `images.${endpoint}`, unitType: 'image' },
            openapi: imageDoc(endpoint),
          },
          // Before the idempotency hook fingerprints the request.
          preValidation: takeMultipart(deps.uploadsDir, spoolBudget),
        },
        async (request, reply) => {
          const call = takeImageCall(deps, endpoint, request);
          try {
            // Links the upstream fetches, under the one URL policy (docs/media.md): data URIs are no links.
            const links = call.image.references.filter((r) => /^https?:\/\//i.test(r)).map((url) => ({ field: 'image', url }));
            const refused = deps.mediaProbe && links.length > 0 ? await urlRefusal(deps.mediaProbe, links) : null;
            if (refused) return call.reject('invalid_request', refused);
            return call.body.async === true ? await submitImageTask(taskDeps, call, reply) : await relayImages(deps, timings, call, reply);
          } finally {
            call.releaseFiles();
          }
        },
      );
    }
    await app.register(imageTaskRoutes(taskDeps));
  };
}

/**
 * One synchronous image call: hold unit price × images, run the channel ladder, settle on the
 * images actually returned. Past the keep-alive point the 200 is committed, so a later failure is
 * written as a 200 with an `error` body.
 */
async function relayImages(deps: ImagesDeps, timings: ImageTimings, call: ImageCall, reply: FastifyReply): Promise<unknown> {
  const { facts, reject, model, endpoint } = call;
  const request = facts.request;
  const caller = request.caller!;
  const holdId = await holdCall(
    deps.ledger,
    facts,
    { amount: call.unitPrice * BigInt(call.units), purpose: `images.${endpoint} ${model.id}`, ttlSeconds: Math.ceil(timings.ladderMs / 1000) + HOLD_GRACE_S },
    reject,
  );

  const budget = new CallSignal(timings.ladderMs);
  // Known to the shutdown, which ends it if it outlasts the grace.
  const untrack = trackCall(request, budget);
  const answer = new KeptAlive(request, reply, timings);
  // Set once the hold's settlement or release has been written: any failure before that (a
  // body or an answer the gateway cannot handle, a failed write) releases it, with its row.
  let closed = false;
  try {
    const outcome = await runImageLadder({ timings, now: deps.now, ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}) }, facts, call.routes, call.image, budget, { abandoned: () => answer.clientGone });
    if (outcome.kind === 'abandoned') {
      // Nobody is left to answer: no other channel is tried, nothing is billed. 499 (nginx's
      // "client closed the request") only ever reaches the access log.
      await releaseFailed(deps.ledger, facts, holdId, 'client_disconnected', 'the client disconnected', { unit_type: 'image' });
      closed = true;
      return answer.send(499, JSON.stringify(errorBody('chat', new GatewayError('upstream_unreachable', 'the client disconnected'))));
    }
    const final = imageAnswer(outcome, deps.now());
    if (final.ok) {
      const billed = call.unitPrice * min(BigInt(final.delivered.count), BigInt(call.units));
      request.callMeter?.charge(billed);
      const record = callRecord(facts, {
        status: 'success',
        unit_count: final.delivered.count,
        unit_type: 'image',
        input_tokens: final.delivered.inputTokens,
        output_tokens: final.delivered.outputTokens,
        result_urls: [...final.delivered.urls],
        result_expires_at: final.delivered.expiresAt,
      });
      const traced = outcome.kind === 'answered' ? outcome.traced : null;
      await traceSettlement(request, { holdId, amount: billed, record, attempt: traced }, () => deps.ledger.settle(caller.accountId, holdId, billed, record));
      closed = true;
      // Test seam (GATEWAY_FAULT): the process dies between the charge and the Idempotency-Key record.
      faultPoint('image-settled');
      return answer.send(200, final.body);
    }
    await releaseFailed(deps.ledger, facts, holdId, final.code, final.message, { unit_type: 'image' });
    closed = true;
    if (final.gatewayError && !answer.committed) throw final.gatewayError;
    for (const [name, value] of Object.entries(final.headers)) reply.header(name, value);
    return answer.send(final.status, final.body);
  } catch (error) {
    if (!closed) await releaseUnsettled(deps.ledger, facts, holdId, error, { unit_type: 'image' });
    if (!answer.committed) throw error;
    request.log.error({ err: error }, 'image call failed after the keep-alive began');
    const failure = failureOf(error, request.id);
    return answer.send(failure.status, JSON.stringify(errorBody('chat', failure)));
  } finally {
    budget.clear();
    answer.stop();
    untrack();
  }
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
