import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { HostedOutputs } from '../../../objects/hosted';
import { LocalObjectStore } from '../../../objects/store';
import { GatewayError } from '../../errors';
import type { RouteDoc } from '../../openapi/route-doc';
import { byteRange } from './byte-range';

const FileQuery = z.looseObject({
  expires: z.string().optional().describe('Unix seconds: the end of the link (and of the file).'),
  signature: z.string().optional().describe('The link’s HMAC signature.'),
});

const mediaFileDoc = (prefix: string): RouteDoc => ({
  operationId: 'downloadHostedMedia',
  summary: 'A media output the gateway hosts (speech audio and the like), by its signed link',
  description:
    'The signature is the credential: the link works for anyone holding it, until it expires (24 hours after the output was made, unless the call said otherwise); the file is deleted soon after. `Range` requests are answered (206) so that players can seek. Served only with the local object store; with S3 the links are presigned bucket URLs.',
  tags: ['media'],
  path: `${prefix}{key}`,
  params: { key: z.string().describe('The object key, `media/{account}/{id}/{name}` (contains `/`).') },
  query: FileQuery,
  headers: { range: z.string().optional().describe('One `bytes=` range (`bytes=0-`, `bytes=100-199`, `bytes=-500`); several are answered with the whole file.') },
  responses: {
    200: { description: 'The whole file, with its stored content type.', mediaTypes: ['application/octet-stream'] },
    206: { description: 'The requested bytes, with `Content-Range`.', mediaTypes: ['application/octet-stream'] },
  },
  errors: {
    404: 'The link expired, was altered or is unknown, or the file is gone: `not_found`.',
    416: 'A `Range` this file cannot satisfy: `range_not_satisfiable`, with `Content-Range: bytes */<size>`.',
  },
});

// A browser shows these itself without running anything; any other type is only ever downloaded,
// so that bytes an upstream labelled text/html or image/svg+xml never run on the gateway's origin.
const SHOWN_INLINE = /^(audio\/|video\/|image\/(png|jpeg|gif|webp|avif)\b)/i;

/** The route the local store's media links point at (src/objects/hosted.ts). With S3 the links go to
 * the bucket and nothing is registered. */
export function hostedFileRoutes(hosted: HostedOutputs, now: () => number) {
  return async (app: FastifyInstance) => {
    const store = hosted.store;
    if (!(store instanceof LocalObjectStore)) return;
    app.get<{ Params: { '*': string }; Querystring: z.output<typeof FileQuery> }>(
      `${store.downloadPrefix}*`,
      { config: { auth: 'none', openapi: mediaFileDoc(store.downloadPrefix) } },
      async (request, reply) => {
        const key = request.params['*'];
        const expires = Number(request.query.expires);
        const at = now();
        if (!store.verify(key, expires, request.query.signature ?? '', at)) throw new GatewayError('not_found', 'media link expired or invalid');
        const object = await store.get(key);
        if (!object) throw new GatewayError('not_found', 'media file not found; it may have expired');
        const size = object.bytes.length;
        const range = byteRange(request.headers.range, size, [request.headers['if-range']].flat()[0]);
        if (range.kind === 'unsatisfiable')
          throw new GatewayError('range_not_satisfiable', `the range "${String(request.headers.range).slice(0, 100)}" is outside this file of ${size} bytes`, {
            'content-range': `bytes */${size}`,
          });
        // Object keys of hosted outputs end in a name made of [A-Za-z0-9._-] (objects/hosted.ts): no
        // quoting to get wrong.
        const name = key.split('/').pop()!.replace(/[^A-Za-z0-9._-]/g, '_');
        reply
          .header('content-type', object.contentType)
          .header('content-disposition', `${SHOWN_INLINE.test(object.contentType) ? 'inline' : 'attachment'}; filename="${name}"`)
          // The stored type is the producer's word: a browser must not second-guess it into HTML or script.
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', 'sandbox')
          // Cached no longer than the link lives.
          .header('cache-control', `private, max-age=${Math.max(0, expires - at)}`)
          .header('accept-ranges', 'bytes');
        if (range.kind === 'whole') return reply.send(object.bytes);
        return reply
          .code(206)
          .header('content-range', `bytes ${range.start}-${range.end}/${size}`)
          .send(object.bytes.subarray(range.start, range.end + 1));
      },
    );
  };
}
