/**
 * What the gateway can learn about a media file a client names by URL (a clip's materials, a digital
 * human's source video or driving audio) without downloading it: its size and type from a HEAD, its
 * format, dimensions and duration from the first bytes. A URL that cannot be probed is passed on and
 * the upstream decides; a URL that must not be fetched (a private address) is refused.
 */
export interface MediaFacts {
  /** The URL as messages name it: without its query, fragment or credentials (a query may hold a token,
   * and a refusal's message is kept in the call log). */
  readonly url: string;
  /** The server's Content-Type, without parameters. */
  readonly contentType: string | null;
  /** The whole file's size (Content-Length, or the total of a Content-Range). */
  readonly bytes: number | null;
  /** Sniffed from the bytes, else from the content type: `jpg`, `png`, `webp`, `gif`, `mp4`, `mov`, `mp3`, `wav`, `m4a`, … */
  readonly format: string | null;
  readonly width: number | null;
  readonly height: number | null;
  readonly durationS: number | null;
  /** A video's codec: `h264`, `hevc`, else its sample entry's four-cc (`av1`, `vp9`, `mpeg4`, `apcn`, …). */
  readonly videoCodec?: string | null;
  /** A video's frames per second over the whole track (sample count over duration). */
  readonly fps?: number | null;
  /** An image with several frames (webp's animation flag, an APNG); null or absent: unknown. */
  readonly animated?: boolean | null;
  /** What could not be learnt and why (an mp4 whose index is at the end, a read cut by the time limit). */
  readonly notes?: readonly string[];
}

export type MediaProbeResult =
  | { readonly kind: 'probed'; readonly facts: MediaFacts }
  /** Nothing could be learnt (a server that refuses HEAD and ranges, a time-out, an unknown format): passed on. */
  | { readonly kind: 'unprobed'; readonly reason: string }
  /** Must not be fetched: not http(s), or an address the config keeps private. A 400 naming why. */
  | { readonly kind: 'refused'; readonly message: string };

export interface UrlProbe {
  probe(url: string): Promise<MediaProbeResult>;
  /** The URL policy alone (src/media-check/url-policy.ts), for a URL passed on unprobed: why it must not be
   * passed on, or null. Absent (a test's fake): every URL may. */
  admit?(url: string): Promise<string | null>;
}

/** A gateway that probes nothing: every URL is passed on for the upstream to judge. */
export const NO_MEDIA_PROBE: UrlProbe = { probe: async () => ({ kind: 'unprobed', reason: 'media probing is off' }) };
