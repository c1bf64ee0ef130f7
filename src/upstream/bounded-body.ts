/**
 * An upstream body read whole, but never past a bound: an upstream (a bug, a proxy, a compromised
 * channel) must not make the gateway hold an answer of any size. Streams are bounded elsewhere
 * (back-pressure, the largest event); this is for answers read before anything is sent.
 */

const MiB = 1024 * 1024;

/** A non-streamed chat answer: 128 choices of 32,768 tokens are about 16 MB of JSON. */
export const CHAT_ANSWER_BYTES = 64 * MiB;
/** An image answer: ten large base64 images. */
export const IMAGE_ANSWER_BYTES = 256 * MiB;
/** A text-to-speech answer: 4,096 characters at speed 0.25 are about 16 minutes of audio, 47 MB as
 * 24 kHz 16-bit wav or pcm (the largest formats); the bound leaves room for a higher sample rate. */
export const SPEECH_ANSWER_BYTES = 64 * MiB;
/** An error body: only its message is used (and kept, bounded, in the call log). */
export const ERROR_BODY_BYTES = 1 * MiB;

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the upstream answer is larger than ${limit / MiB} MiB`);
    this.name = 'BodyTooLargeError';
  }
}

interface UpstreamBody extends AsyncIterable<unknown> {
  destroy(error?: Error): unknown;
}

/** The body as UTF-8 text; past `maxBytes` the body is destroyed and BodyTooLargeError thrown,
 * or, with `truncate`, the first `maxBytes` are kept and the rest dropped unread. */
export async function textWithin(body: UpstreamBody, maxBytes: number, options: { truncate?: boolean } = {}): Promise<string> {
  return (await bytesWithin(body, maxBytes, options)).toString('utf8');
}

/** The body's bytes, bounded as `textWithin` bounds its text (audio and other binary answers). */
export async function bytesWithin(body: UpstreamBody, maxBytes: number, options: { truncate?: boolean } = {}): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    if (size + bytes.length > maxBytes) {
      if (!options.truncate) {
        body.destroy();
        throw new BodyTooLargeError(maxBytes);
      }
      chunks.push(bytes.subarray(0, maxBytes - size));
      body.destroy();
      break;
    }
    chunks.push(bytes);
    size += bytes.length;
  }
  return Buffer.concat(chunks);
}
