/**
 * What each body class of routes may send as a body: how many bytes, and how long the client has to
 * send them. A route outside every class takes no body at all. One table, so that a new route is safe by
 * default and every limit can be read in one place (docs/operations.md lists them).
 */

/** 95 MB: the spec's limit on an edit's body, for image bytes: a multipart body's files. */
export const IMAGE_BODY_LIMIT = 95 * 1024 * 1024;
/**
 * The JSON form of both image routes holds a prompt and a few references (URLs or data URIs), and is
 * parsed, validated and re-serialised whole, on the event loop: its bounds are what that may cost,
 * not the spec's 95 MB. One string (a data URI: about a 6 MB image) at most 8 MB, the body at most
 * 16 MB (two such images, or more smaller ones); images beyond go as multipart files.
 */
export const IMAGE_JSON_LIMITS = { body: 16 * 1024 * 1024, string: 8 * 1024 * 1024 } as const;

/** A class of routes that share their body's limits (`family` is a task family's word, src/commands/task). */
export type BodyClass = 'chat' | 'images' | 'media' | 'mcp' | 'admin' | 'admin-objects' | 'none';

export interface BodyRule {
  /** Bytes, as sent (before any parsing). 0: the route takes no body. */
  readonly limit: number;
  /** The time a JSON body has to arrive once the gateway starts reading it. Bodies read by other
   * parsers (multipart image edits, admin objects' raw bytes) are bounded by the server's
   * whole-request time instead (INTAKE_TIMINGS.requestMs, the same 300 s). */
  readonly deadlineMs: number;
  /** Refuse a NUL character anywhere in a JSON body: what the body holds is stored in text
   * columns, which cannot hold one. Chat bodies keep theirs: they go to the upstream as sent. */
  readonly refuseNul?: boolean;
  /** A JSON body's own bounds: one string's, and the whole body's where it is tighter than the class's
   * limit (which then is for multipart bodies only). */
  readonly json?: JsonRule;
}

/** What a JSON body of a class may hold, checked as it arrives. */
export interface JsonRule {
  /** Bytes of the whole JSON body, when tighter than the class's limit (absent: the class's, as the
   * config's `body_limits` may set it). */
  readonly limit?: number;
  /** Bytes of any one string (a key or a value, as sent): refused at the byte that passes it. */
  readonly stringLimit: number;
  /** Where a client goes with more (said in the 413's message). */
  readonly instead: string;
}

const MiB = 1024 * 1024;

/**
 * 4 MB: one string of a media body. The largest a media request needs is a video's reference image as a
 * data URI, which the video schema takes up to 2,000,000 characters (audio and video references go by URL
 * only); twice that leaves room for a client that escapes the base64's slashes (`\/`), so such a URI still
 * reaches validation and its own 400. Every other string is far shorter (a speech input: 4,096
 * characters; lyrics: 5,000; a digital human's text: 10,000).
 */
export const MEDIA_JSON_STRING_LIMIT = 4 * MiB;

export const BODY_RULES: Readonly<Record<BodyClass, BodyRule>> = {
  // Messages, tools and a few inline images; larger media go by URL.
  chat: { limit: 8 * MiB, deadlineMs: 60_000 },
  // 95 MB of multipart files; JSON (a prompt and a few data-URI images) is parsed whole on the event
  // loop, so it is bounded by what it may hold, not by the spec's 95 MB of image bytes.
  images: {
    limit: IMAGE_BODY_LIMIT,
    deadlineMs: 300_000,
    json: { limit: IMAGE_JSON_LIMITS.body, stringLimit: IMAGE_JSON_LIMITS.string, instead: 'send larger images as multipart files (up to 95 MB)' },
  },
  // Media task submissions (video, music, speech, voices, transcripts): JSON whose media go by URL,
  // except a few reference images a video may carry inline as data URIs. The body is parsed whole, so
  // one string is bounded by the largest a media request needs (MEDIA_JSON_STRING_LIMIT).
  media: { limit: 32 * MiB, deadlineMs: 120_000, json: { stringLimit: MEDIA_JSON_STRING_LIMIT, instead: 'send larger media by URL' } },
  // JSON-RPC tool calls with a handful of ids or a search text.
  mcp: { limit: 1 * MiB, deadlineMs: 30_000, refuseNul: true },
  // The largest admin JSON is a knowledge page (a body of up to 2,000,000 characters).
  admin: { limit: 8 * MiB, deadlineMs: 60_000, refuseNul: true },
  // A knowledge page's source file.
  'admin-objects': { limit: 100 * MiB, deadlineMs: 300_000 },
  none: { limit: 0, deadlineMs: 0 },
};

// Embeddings are not served (404 after authentication), but their request is JSON text like a chat call's.
const CHAT_PATHS = new Set(['/v1/chat/completions', '/v1/messages', '/v1/messages/count_tokens', '/v1/responses', '/v1/embeddings']);
const MEDIA_PREFIXES = ['/v1/videos/', '/v1/music/', '/v1/audio/', '/v1/transcripts/'];
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The body class of a route, from its method and its full path pattern (`/v1beta/models/*`). */
export function bodyClassOf(method: string, url: string): BodyClass {
  if (READ_METHODS.has(method)) return 'none';
  if (CHAT_PATHS.has(url) || url.startsWith('/v1beta/models/')) return method === 'POST' ? 'chat' : 'none';
  if (url.startsWith('/v1/images/')) return method === 'POST' ? 'images' : 'none';
  if (MEDIA_PREFIXES.some((prefix) => url.startsWith(prefix))) return method === 'POST' ? 'media' : 'none';
  if (url === '/mcp') return method === 'POST' ? 'mcp' : 'none';
  if (url.startsWith('/admin/v1/objects/')) return method === 'PUT' ? 'admin-objects' : 'none';
  if (url.startsWith('/admin/v1/')) return 'admin';
  return 'none';
}
