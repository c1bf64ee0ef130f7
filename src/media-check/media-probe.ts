import type { IncomingHttpHeaders } from 'node:http';
import { audioDuration } from './audio';
import { enough } from './enough';
import { PinnedClient, ProbeFailure, ProbeRefusal, systemLookup, type Answer, type HostLookup } from './fetch';
import { imageFacts } from './image';
import { findMoov, parseMoov, topBoxes, type IsoFacts } from './iso';
import { loadParsers, type Parsers } from './parsers';
import type { MediaFacts, MediaProbeResult, UrlProbe } from './port';
import { discard, readPrefix } from './read';
import { addressRefusal } from './url-policy';
import { AUDIO_FORMATS, formatOfContentType, IMAGE_FORMATS, ISO_FORMATS, sniffFormat } from './sniff';

export interface MediaProbeSettings {
  /** Fetch from loopback, private, link-local and other non-public addresses too (tests, closed networks). */
  readonly allowPrivateAddresses: boolean;
  /** The whole probe (DNS, HEAD, ranged reads, redirects) ends within this. */
  readonly timeoutMs: number;
  /** The most bytes read from one response. */
  readonly maxReadBytes: number;
}

export const MEDIA_PROBE_DEFAULTS: MediaProbeSettings = { allowPrivateAddresses: false, timeoutMs: 3000, maxReadBytes: 1024 * 1024 };

export interface MediaProbeSeams {
  /** How host names resolve (default: the system's resolver). */
  readonly lookup?: HostLookup;
  /** Redirects followed per request (default 5). */
  readonly maxRedirects?: number;
  /** Which addresses are refused and as what (default `forbiddenAddressClass`): a test's loopback server
   * may stand for a public host while other addresses are still refused. */
  readonly forbidden?: (address: string) => string | null;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Where the first bytes came from, for a second read, and the parsers to read them with. */
interface Source {
  /** The bytes are the whole file. */
  readonly whole: boolean;
  /** The server answered the range (206): another range may be asked for. */
  readonly rangeable: boolean;
  readonly url: URL;
  readonly client: PinnedClient;
  readonly signal: AbortSignal;
  readonly parsers: Parsers;
}

/** The URL as a message may show it: its query (perhaps a token), fragment and credentials left out. */
function shownUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}${url.search ? '?…' : ''}`;
}

const header = (headers: IncomingHttpHeaders, name: string): string | null => {
  const value = headers[name];
  return typeof value === 'string' ? value : null;
};

const contentTypeOf = (headers: IncomingHttpHeaders) => header(headers, 'content-type')?.split(';')[0]?.trim().toLowerCase() || null;

function lengthOf(headers: IncomingHttpHeaders): number | null {
  const value = header(headers, 'content-length');
  return value !== null && /^\d+$/.test(value) ? Number(value) : null;
}

/** `bytes 0-1023/4096`: the first byte and the whole file's size (null for `*`). */
function rangeOf(headers: IncomingHttpHeaders): { start: number; total: number | null } | null {
  const match = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header(headers, 'content-range')?.trim() ?? '');
  return match ? { start: Number(match[1]), total: match[2] === '*' ? null : Number(match[2]) } : null;
}

function reasonOf(error: unknown): string {
  const e = error as { code?: string; name?: string; cause?: { code?: string } };
  return e.code ?? e.cause?.code ?? e.name ?? 'unknown error';
}

const ok = (status: number) => status >= 200 && status < 300;

/**
 * A media URL probed before any money moves: HEAD for the type and size, then a ranged GET of the first
 * bytes for the format, dimensions and duration (image-size, mp4box, music-metadata), an mp4 whose index
 * is at its end read from there with a second range. Every request is guarded against fetching inside
 * the gateway's network (src/media-check/fetch.ts) and the whole probe ends within `timeoutMs`. It never throws:
 * a URL it may not fetch is `refused`, one it could learn nothing of is `unprobed` (passed on).
 */
export class MediaProbe implements UrlProbe {
  readonly settings: MediaProbeSettings;
  private readonly lookup: HostLookup;
  private readonly maxRedirects: number;
  private readonly forbidden: ((address: string) => string | null) | undefined;

  constructor(settings: Partial<MediaProbeSettings> = {}, seams: MediaProbeSeams = {}) {
    this.settings = { ...MEDIA_PROBE_DEFAULTS, ...settings };
    this.lookup = seams.lookup ?? systemLookup;
    this.maxRedirects = seams.maxRedirects ?? 5;
    this.forbidden = seams.forbidden;
  }

  admit(url: string): Promise<string | null> {
    return addressRefusal(url, { allowPrivateAddresses: this.settings.allowPrivateAddresses, lookup: this.lookup, forbidden: this.forbidden, timeoutMs: this.settings.timeoutMs });
  }

  async probe(url: string): Promise<MediaProbeResult> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { kind: 'refused', message: 'the media URL is not a valid URL' };
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      return { kind: 'refused', message: `media URLs must be http(s), not ${target.protocol.replace(/:$/, '')}` };
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException('the probe ran out of time', 'TimeoutError')), this.settings.timeoutMs);
    const client = new PinnedClient({
      lookup: this.lookup,
      allowPrivateAddresses: this.settings.allowPrivateAddresses,
      ...(this.forbidden ? { forbidden: this.forbidden } : {}),
      maxRedirects: this.maxRedirects,
      signal: deadline.signal,
    });
    try {
      return await this.read(target, client, deadline.signal, await loadParsers());
    } catch (error) {
      if (error instanceof ProbeRefusal) return { kind: 'refused', message: error.message };
      if (deadline.signal.aborted) return { kind: 'unprobed', reason: `no answer within ${this.settings.timeoutMs} ms` };
      if (error instanceof ProbeFailure) return { kind: 'unprobed', reason: error.message };
      return { kind: 'unprobed', reason: `the URL could not be read (${reasonOf(error)})` };
    } finally {
      clearTimeout(timer);
      await client.close();
    }
  }

  private async read(target: URL, client: PinnedClient, signal: AbortSignal, parsers: Parsers): Promise<MediaProbeResult> {
    const max = this.settings.maxReadBytes;
    const facts: Mutable<MediaFacts> & { notes: string[] } = {
      url: shownUrl(target),
      contentType: null,
      bytes: null,
      format: null,
      width: null,
      height: null,
      durationS: null,
      videoCodec: null,
      fps: null,
      animated: null,
      notes: [],
    };
    let url = target;
    let headAnswered = false;
    try {
      const head = await client.fetch(target, 'HEAD');
      discard(head.body);
      if (ok(head.statusCode)) {
        headAnswered = true;
        url = head.url;
        facts.contentType = contentTypeOf(head.headers);
        facts.bytes = lengthOf(head.headers);
      }
    } catch (error) {
      // A server that breaks on HEAD may still serve a GET; a refusal or the deadline ends the probe.
      if (error instanceof ProbeRefusal || signal.aborted) throw error;
    }
    const headOnly = (why: string): MediaProbeResult => {
      if (!headAnswered) throw new ProbeFailure(why);
      facts.format = formatOfContentType(facts.contentType);
      facts.notes.push(`the first bytes could not be read: ${why}`);
      return { kind: 'probed', facts };
    };
    // A range spares a large file; HEAD's answer is not trusted to say whether the server honours one.
    let get: Answer;
    try {
      get = await client.fetch(url, 'GET', { range: `bytes=0-${max - 1}` });
    } catch (error) {
      if (error instanceof ProbeRefusal) throw error;
      if (signal.aborted) return headOnly(`no answer within ${this.settings.timeoutMs} ms`);
      return headOnly(error instanceof ProbeFailure ? error.message : `the connection failed (${reasonOf(error)})`);
    }
    const range = get.statusCode === 206 ? rangeOf(get.headers) : null;
    if (!(get.statusCode === 200 || (range && range.start === 0))) {
      discard(get.body);
      return headOnly(get.statusCode === 206 ? 'the server answered a range that does not start at 0' : `the server answered ${get.statusCode}`);
    }
    facts.contentType ??= contentTypeOf(get.headers);
    const total = (range ? range.total : lengthOf(get.headers)) ?? facts.bytes;
    facts.bytes = total;
    const prefix = await readPrefix(get.body, max, (bytes) => enough(parsers, bytes, max));
    if (prefix.interrupted) facts.notes.push(`reading stopped after ${prefix.bytes.length} bytes at ${prefix.interrupted}`);
    const whole = total !== null ? prefix.bytes.length >= total : get.statusCode === 200 && prefix.ended;
    await this.describe(prefix.bytes, facts, { whole, rangeable: range !== null, url: get.url, client, signal, parsers });
    if (facts.contentType === null && facts.bytes === null && facts.format === null)
      return { kind: 'unprobed', reason: 'the server told neither the type nor the size, and the first bytes are of no known format' };
    return { kind: 'probed', facts };
  }

  /** What the first bytes tell, by the format they are in. */
  private async describe(
    bytes: Buffer,
    facts: Mutable<MediaFacts> & { notes: string[] },
    from: Source,
  ): Promise<void> {
    const sniffed = sniffFormat(bytes);
    facts.format = sniffed ?? formatOfContentType(facts.contentType);
    if (sniffed === null) {
      if (bytes.length > 0) facts.notes.push('the first bytes are of no format the probe knows');
      return;
    }
    if (IMAGE_FORMATS.has(sniffed)) {
      const image = imageFacts(from.parsers, bytes, sniffed);
      if (image) Object.assign(facts, { width: image.width, height: image.height, animated: image.animated });
      else facts.notes.push(`the image's dimensions are not in its first ${bytes.length} bytes`);
    } else if (ISO_FORMATS.has(sniffed)) {
      const iso = await this.isoFacts(bytes, facts, from);
      if (iso) {
        Object.assign(facts, { width: iso.width, height: iso.height, durationS: iso.durationS, videoCodec: iso.videoCodec, fps: iso.fps });
        if (sniffed === 'mp4' && !iso.hasVideo && iso.hasAudio) facts.format = 'm4a';
      } else if (sniffed === 'mp4' && facts.contentType?.startsWith('audio/')) facts.format = 'm4a';
    } else if (AUDIO_FORMATS.has(sniffed)) {
      try {
        facts.durationS = await audioDuration(from.parsers, bytes, facts.bytes);
      } catch (error) {
        facts.notes.push(`the ${sniffed} header could not be read (${(error as Error).message})`);
      }
      if (facts.durationS === null) facts.notes.push(`the ${sniffed}'s duration is not in its first ${bytes.length} bytes`);
    }
  }

  /**
   * An ISO file's moov box: in the first bytes, or (the file not being "fast start") read with a second
   * range from where the first bytes say it starts, when the server honours ranges.
   */
  private async isoFacts(
    bytes: Buffer,
    facts: Mutable<MediaFacts> & { notes: string[] },
    from: Source,
  ): Promise<IsoFacts | null> {
    const max = this.settings.maxReadBytes;
    const first = topBoxes(bytes)[0];
    const ftyp = first?.type === 'ftyp' && first.end !== null && first.end <= bytes.length ? bytes.subarray(first.start, first.end) : null;
    const unknown = (why: string) => {
      facts.notes.push(`the ${facts.format}'s index (moov box) ${why}: its duration, dimensions, codec and frame rate are unknown`);
      return null;
    };
    const parsed = (moov: Uint8Array) => parseMoov(from.parsers, ftyp, moov) ?? unknown('could not be parsed');
    const search = findMoov(bytes);
    if (search.kind === 'found') return parsed(bytes.subarray(search.start, search.end));
    if (search.kind === 'none' || from.whole || (facts.bytes !== null && search.from >= facts.bytes)) return unknown('is missing');
    const where = `is not in the first ${bytes.length} bytes (the file is not "fast start")`;
    if (!from.rangeable) return unknown(`${where} and the server does not serve ranges`);
    if (from.signal.aborted) return unknown(`${where} and the time limit was reached`);
    let tail: Answer;
    try {
      tail = await from.client.fetch(from.url, 'GET', { range: `bytes=${search.from}-${search.from + max - 1}` });
    } catch (error) {
      if (error instanceof ProbeRefusal) throw error;
      return unknown(`${where} and could not be read after them (${from.signal.aborted ? 'the time limit' : reasonOf(error)})`);
    }
    if (tail.statusCode !== 206 || rangeOf(tail.headers)?.start !== search.from) {
      discard(tail.body);
      return unknown(`${where} and the server did not serve the range after them (${tail.statusCode})`);
    }
    const rest = await readPrefix(tail.body, max, (b) => {
      const moov = findMoov(b, search.from);
      return moov.kind !== 'later' || moov.from >= search.from + max;
    });
    const later = findMoov(rest.bytes, search.from);
    if (later.kind === 'found') return parsed(rest.bytes.subarray(later.start, later.end));
    return unknown(`${where} nor in the ${rest.bytes.length} bytes after them${rest.interrupted ? ` (reading stopped at ${rest.interrupted})` : ''}`);
  }
}
