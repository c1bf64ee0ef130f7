/** OpenAI Images: POST /v1/images/generations and /v1/images/edits (JSON or multipart). */
import { asArray, asRecord } from '../conversation';
import { vendorError } from '../errors';
import { nowSeconds, pad, sendJson, type Ctx } from '../http';
import { promptTokens } from '../tokens';
import type { UploadedFile } from '../types';

/** A 1×1 transparent PNG. */
export const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** Fixed-grid models always return 4 images: ids containing "grid4" (and midjourney ids). */
export function isGrid4(model: string): boolean {
  const m = model.toLowerCase();
  return m.includes('grid4') || m.startsWith('midjourney');
}

/** `<W>x<H>` → [W, H]; anything else (auto, 2K, absent) → 1024×1024. */
export function imageDims(size: unknown): [number, number] {
  const m = typeof size === 'string' ? /^(\d+)x(\d+)$/i.exec(size.trim()) : null;
  return m ? [Number(m[1]), Number(m[2])] : [1024, 1024];
}

/** Output tokens of one image: ceil(W × H / 1024). */
export function imageTokens(size: unknown): number {
  const [w, h] = imageDims(size);
  return Math.ceil((w * h) / 1024);
}

function referenceCount(b: Record<string, unknown>): number {
  const files = asArray(b.files) as UploadedFile[];
  const fromFiles = files.filter((f) => f.field === 'image' || f.field === 'image[]').length;
  const fromJson = [b.image, b.images, b.image_urls].reduce<number>(
    (n, v) => n + (Array.isArray(v) ? v.length : typeof v === 'string' || (v && typeof v === 'object') ? 1 : 0),
    0,
  );
  return fromFiles + fromJson;
}

export function handleImages(ctx: Ctx, edit: boolean): void {
  const b = asRecord(ctx.body);
  const bad = (message: string, param: string): void => {
    const e = vendorError('images', 400, message);
    const body = e.body as { error: Record<string, unknown> };
    body.error.param = param;
    sendJson(ctx, e.status, body, e.headers);
  };
  if (typeof b.prompt !== 'string' || b.prompt === '') return bad("Missing required parameter: 'prompt'.", 'prompt');
  const n = b.n === undefined ? 1 : Number(b.n);
  if (!Number.isInteger(n) || n < 1) return bad(`Invalid 'n': integer below minimum value. Expected a value >= 1, but got ${String(b.n)} instead.`, 'n');
  if (n > 10) return bad(`Invalid 'n': integer above maximum value. Expected a value <= 10, but got ${n} instead.`, 'n');
  const references = referenceCount(b);
  if (edit && references === 0) return bad("Missing required parameter: 'image'.", 'image');

  const model = typeof b.model === 'string' ? b.model : 'dall-e-2';
  // images_partial: an upstream that delivered fewer images than asked; usage counts what came
  const count = Math.min(isGrid4(model) ? 4 : n, ctx.scenario.imagesPartial ?? Infinity);
  const [w, h] = imageDims(b.size);
  const size = `${w}x${h}`;
  const b64 = b.response_format === 'b64_json';
  const data = Array.from({ length: count }, (_, i) =>
    b64 ? { b64_json: PNG_BASE64, size } : { url: `${ctx.sim.baseUrl}/files/img-sim${pad(ctx.seq)}-${i}.png`, size },
  );
  const textTokens = promptTokens('images', b);
  const imageInput = references * 256;
  const output = count * imageTokens(b.size);
  sendJson(ctx, 200, {
    created: nowSeconds(),
    model,
    data,
    ...(ctx.scenario.noUsage
      ? {}
      : {
          usage: {
            generated_images: count,
            input_tokens: textTokens + imageInput,
            input_tokens_details: { text_tokens: textTokens, image_tokens: imageInput },
            output_tokens: output,
            total_tokens: textTokens + imageInput + output,
          },
        }),
  });
}
