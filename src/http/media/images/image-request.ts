import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../../../commands/ledger';
import type { ModelRegistry } from '../../../config/registry';
import type { ModelConfig } from '../../../config/schema';
import { parseUsd } from '../../../money/usd';
import { zodMessage } from '../../../config/zod-message';
import type { ImageEndpoint, ImageRequest } from '../../../upstream/protocols/images';
import type { Route, Router } from '../../../channels/routing';
import { callableModel, beginCall, replayRefusal, type CallFacts } from '../../billable-call';
import { GatewayError, requestTooLarge as tooLarge, type ErrorCode } from '../../errors';
import { callerGroup } from '../../../channels/groups';
import { SpooledUploads, type SpooledFile } from './image-uploads';
import type { UploadBudget } from './upload-budget';
import { IMAGE_BODY_LIMIT, IMAGE_JSON_LIMITS } from '../../intake/body-classes';

// What both modes of an image call share before any money moves: the body (JSON or multipart),
// its validation, the model, the channels and the price.

export const MAX_IMAGES = 10;

const References = z.union([z.string().min(1), z.array(z.string().min(1))]);
export const ImageBody = z.looseObject({
  model: z.string().min(1),
  prompt: z.string().min(1),
  n: z.number().int().min(1).max(MAX_IMAGES, `must be at most ${MAX_IMAGES}`).optional(),
  size: z.string().optional(),
  image: References.optional(),
  image_urls: z.array(z.string().min(1)).optional(),
  response_format: z.enum(['url', 'b64_json']).optional(),
  async: z.boolean().optional().describe('true: submit and poll (`GET /v1/images/generations/{id}`); the multipart field `async=true` says the same.'),
});
export type ImageBody = z.output<typeof ImageBody>;

/** Files of a multipart request, taken before the idempotency hook fingerprints the request. */
const uploads = new WeakMap<FastifyRequest, { readonly spool: SpooledUploads; readonly files: SpooledFile[] }>();

/**
 * The route's `preValidation`: a multipart body read into fields and files (JSON is fastify's). Each file
 * goes to disk under `uploadsDir` as it arrives (image-uploads.ts), counted against the spool's disk
 * budget (upload-budget.ts) as the caller's account, held by the request until its answer is over, then
 * deleted unless a call still holds it.
 */
export function takeMultipart(uploadsDir: string, budget: UploadBudget) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!request.isMultipart()) return;
    const spool = new SpooledUploads(uploadsDir, request.log, { budget, account: request.caller?.accountId ?? '' });
    const letGo = spool.hold()!;
    // Whatever comes next (a refusal, an answer, a client gone mid-upload), the connection's end lets go.
    if (reply.raw.destroyed) letGo();
    else reply.raw.once('close', letGo);
    let taken: { fields: Record<string, unknown>; files: SpooledFile[] };
    try {
      taken = await readMultipart(request, spool);
    } catch (error) {
      letGo();
      throw error;
    }
    const { fields, files } = taken;
    request.body = fields;
    uploads.set(request, { spool, files });
    request.idempotencyFingerprintParts = { fields, files: files.map((f) => ({ name: f.field, filename: f.filename, contentType: f.mimetype, sha256: f.sha256 })) };
  };
}

/** Multipart text fields as JSON values: `n` a number, `async` a boolean, `x[]` and repeated names arrays. */
async function readMultipart(request: FastifyRequest, spool: SpooledUploads): Promise<{ fields: Record<string, unknown>; files: SpooledFile[] }> {
  try {
    return await readParts(request, spool);
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    // The parser's refusals: a part over its limits, or a body that is not multipart at all.
    const { statusCode, code, message } = error as { statusCode?: number; code?: string; message?: string };
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(IMAGE_BODY_LIMIT);
    if (statusCode === 413) throw new GatewayError('request_too_large', `the multipart body has too many parts: ${message}`);
    throw new GatewayError('invalid_request', `the multipart body could not be read: ${message ?? 'malformed'}`);
  }
}

async function readParts(request: FastifyRequest, spool: SpooledUploads): Promise<{ fields: Record<string, unknown>; files: SpooledFile[] }> {
  const fields: Record<string, unknown> = {};
  const files: SpooledFile[] = [];
  // The limit is on the whole body, counted as it arrives: the chunk that passes it is refused, not written.
  let size = 0;
  const count = (bytes: number) => {
    size += bytes;
    if (size > IMAGE_BODY_LIMIT) throw tooLarge(IMAGE_BODY_LIMIT);
  };
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      files.push(await spool.take(part, count));
      // The parser stops a file at its own limit without an error (the count above refuses first).
      if (part.file.truncated) throw tooLarge(IMAGE_BODY_LIMIT);
      continue;
    }
    // The parser keeps no more of a field than its limit and says so: the value is not what was sent.
    if (part.valueTruncated)
      throw new GatewayError('request_too_large', `the multipart field ${JSON.stringify(part.fieldname.slice(0, 100))} is over this endpoint's limit of ${IMAGE_JSON_LIMITS.string / (1024 * 1024)} MB for a text field; send images as file parts (up to 95 MB)`);
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

/** The request as the upstream gets it, or what makes it a 400. */
export function parseImageRequest(endpoint: ImageEndpoint, request: FastifyRequest): { body: ImageBody; image: ImageRequest } | { invalid: string } {
  const files = uploads.get(request)?.files ?? [];
  const parsed = ImageBody.safeParse(request.body ?? {});
  if (!parsed.success) return { invalid: zodMessage(parsed.error) };
  const body = parsed.data;
  // `async` is the gateway's own switch: the upstream never sees it.
  const { image, image_urls, async: _async, ...fields } = body;
  const references = [...(image === undefined ? [] : Array.isArray(image) ? image : [image]), ...(image_urls ?? [])];
  const referenceFiles = files.filter((f) => f.field === 'image' || f.field === 'image[]');
  if (endpoint === 'edits' && references.length === 0 && referenceFiles.length === 0)
    return { invalid: 'image: a reference image is required for an edit (file field `image` or `image[]`, or `image` / `image_urls` as URLs or data URIs)' };
  return { body, image: { endpoint, fields, references, files, multipart: request.isMultipart() } };
}

/** Units a request may produce: n, and for fixed-grid SKUs never fewer than the grid. */
export function reservedImages(model: ModelConfig, n: number): number {
  return model.fixed_grid ? Math.max(n, model.fixed_grid) : n;
}

/** The hold of an image call: the per-image price × the images it may produce. No price key exists for
 * reference images, so none is charged for them (the spec's "reference-image fees"). */
export function imageReservation(model: ModelConfig, n: number): { unitPrice: bigint; units: number; amount: bigint } {
  const unitPrice = parseUsd(model.price.per_image ?? '0');
  const units = reservedImages(model, n);
  return { unitPrice, units, amount: unitPrice * BigInt(units) };
}

export interface ImageIntakeDeps {
  readonly ledger: Ledger;
  readonly registry: ModelRegistry;
  readonly router: Router;
  readonly now: () => number;
}

/** A call that passed every check that needs no money: what either mode goes on with. */
export interface ImageCall {
  readonly endpoint: ImageEndpoint;
  readonly facts: CallFacts;
  /** Records a rejected call and throws its GatewayError. */
  readonly reject: (code: ErrorCode, message: string) => never;
  readonly body: ImageBody;
  readonly image: ImageRequest;
  readonly model: ModelConfig;
  readonly routes: readonly Route[];
  readonly unitPrice: bigint;
  readonly units: number;
  /** Lets go of the call's own hold on the request's uploaded files (multipart), taken with the call:
   * once the route's handler is done. */
  readonly releaseFiles: () => void;
  /** Another hold on those files, for a run that outlives the handler (an async task): call what it
   * returns when the run is over. */
  readonly holdFiles: () => () => void;
}

const noHold = () => {};

/** Validation, the model, its channels: a refusal is a rejected call-log row and a thrown 4xx/503. */
export function takeImageCall(deps: ImageIntakeDeps, endpoint: ImageEndpoint, request: FastifyRequest): ImageCall {
  const caller = request.caller!;
  const { facts, reject } = beginCall(deps.ledger, deps.now, request, `images.${endpoint}`, 'image');

  const parsed = parseImageRequest(endpoint, request);
  if ('invalid' in parsed) return reject('invalid_request', parsed.invalid);
  const { body, image } = parsed;
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, body.model);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  const routes: Route[] = model.kind === 'image' ? deps.router.scoped(callerGroup(caller)).routes(model.id, 'images') : [];
  if (routes.length === 0) return reject('no_channel_available', `The model \`${model.id}\` has no channel for image ${endpoint}.`);
  const { unitPrice, units } = imageReservation(model, body.n ?? 1);
  // The files outlive the request's answer while a ladder may still send them: the call holds them from
  // here. Gone already: the client left before the call began, and there is nothing to send.
  const spool = uploads.get(request)?.spool;
  const releaseFiles = spool ? spool.hold() : noHold;
  if (!releaseFiles) return reject('invalid_request', 'the connection closed before the call began; its uploaded files are gone');
  const holdFiles = () => spool?.hold() ?? noHold;
  return { endpoint, facts, reject, body, image, model, routes, unitPrice, units, releaseFiles, holdFiles };
}

/**
 * Whether this key may receive a stored answer of this request (an Idempotency-Key replay): the
 * checks of the key a new call would meet, with the same error. The same key and body name the same
 * model, but another key of the account may be limited to other models or be near its spend cap.
 * The account's balance is not checked again: the call was paid when it ran (a balance of 0 or
 * below is refused at authentication anyway).
 */
export function imageReplayRefusal(deps: Pick<ImageIntakeDeps, 'registry'>, endpoint: ImageEndpoint, request: FastifyRequest): GatewayError | null {
  const caller = request.caller!;
  const parsed = parseImageRequest(endpoint, request);
  if ('invalid' in parsed) return null; // never stored: only successes are
  return replayRefusal(caller, callableModel(deps.registry, caller.key.settings.allowed_models, parsed.body.model), (model) => imageReservation(model, parsed.body.n ?? 1).amount);
}
