/** OpenAI Images on the upstream side: `POST /v1/images/generations` and `/v1/images/edits`,
 * JSON or multipart, answered with `{created, data: [{url | b64_json, ...}], usage?}`. */
import { FormData } from 'undici';
import { isInvalidUsage, readCounts } from '../usage';
import { openAiErrorMessage } from './chat-completions';

export type ImageEndpoint = 'generations' | 'edits';

/** A file sent in a multipart edit (`image`, `image[]`, `mask`, ...). Its bytes are read when the
 * upstream request is sent (the gateway keeps uploads on disk: src/http/media/images/image-uploads.ts). */
export interface UploadedImage {
  readonly field: string;
  readonly filename: string;
  readonly mimetype: string;
  readonly data: Blob;
}

/** An image request as the gateway forwards it: the validated fields plus everything else as sent. */
export interface ImageRequest {
  readonly endpoint: ImageEndpoint;
  /** Every field of the client's body except `image` / `image_urls`, passed through. */
  readonly fields: Readonly<Record<string, unknown>>;
  /** `image` then `image_urls`, in order (order matters for multi-image fusion). */
  readonly references: readonly string[];
  readonly files: readonly UploadedImage[];
  readonly multipart: boolean;
}

export const imagesPath = (endpoint: ImageEndpoint) => `/v1/images/${endpoint}`;

export const imagesAuthHeaders = (apiKey: string): Record<string, string> => ({ authorization: `Bearer ${apiKey}` });

/** The upstream body: the model mapped to the channel's id, references merged into `image`;
 * a multipart request stays multipart with its files under their own field names. */
export function imagesUpstreamBody(request: ImageRequest, upstreamModel: string): { body: string | FormData; contentType?: string } {
  const fields: Record<string, unknown> = { ...request.fields, model: upstreamModel };
  if (request.references.length > 0) fields.image = request.references.length === 1 ? request.references[0] : [...request.references];
  if (!request.multipart) return { body: JSON.stringify(fields), contentType: 'application/json' };
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const item of value) form.append(`${name}[]`, String(item));
    else form.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  // Streamed from the Blob as the request goes out: a file is never read whole into memory.
  for (const file of request.files) form.append(file.field, file.data, file.filename);
  return { body: form };
}

export interface ImagesResult {
  /** Images actually returned: what the call is billed for. */
  readonly count: number;
  readonly urls: readonly string[];
  readonly created: number | null;
  readonly expiresAt: number | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** What a 2xx images answer delivered (the ladder refuses one without a `data` array as unreadable). */
export function imagesResult(body: unknown): ImagesResult {
  const b = (body ?? {}) as { data?: unknown; created?: unknown; expires_at?: unknown; usage?: { input_tokens?: unknown; output_tokens?: unknown } };
  const data = Array.isArray(b.data) ? (b.data as Array<Record<string, unknown>>) : [];
  // The numbers go into the call-log row of the settlement event: only what the log can read back
  // (usage.ts's rules; images are billed by count, so bad token counts are shown as 0).
  const usage = readCounts(b.usage, 'input_tokens', ['input_tokens', 'output_tokens']);
  const counts = usage === null || isInvalidUsage(usage) ? { input_tokens: 0, output_tokens: 0 } : usage;
  return {
    count: data.length,
    urls: data.flatMap((item) => (item && typeof item.url === 'string' ? [item.url] : [])),
    created: unixSeconds(b.created),
    expiresAt: unixSeconds(b.expires_at),
    inputTokens: counts.input_tokens,
    outputTokens: counts.output_tokens,
  };
}

/** A time an upstream reports, if it is one: whole Unix seconds before the year 10000 (a link's
 * expiry is computed from it and stored). */
const unixSeconds = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v < 253_402_300_800 ? v : null);

export const imagesErrorMessage = openAiErrorMessage;
