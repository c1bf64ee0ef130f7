import { lookup as dnsLookup } from 'node:dns/promises';
import type { IncomingHttpHeaders } from 'node:http';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { forbiddenAddressClass, forbiddenNameClass, hostOf } from './address';
import { discard } from './read';

/**
 * The probe's HTTP requests to a client's URL, guarded against server-side request forgery: every hop's
 * host is resolved once, each address checked, and the connection made to the address that was checked
 * (a DNS answer that changes between the check and the connection, "rebinding", cannot redirect it). The
 * Host header and TLS SNI stay the URL's host name.
 */

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Every address of a host name (the test seam: a name resolving to any address without DNS). */
export type HostLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export const systemLookup: HostLookup = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/** The URL must not be fetched; the message is the client's 400. */
export class ProbeRefusal extends Error {
  override readonly name = 'ProbeRefusal';
}

/** The URL could not be probed; the message is the reason (never the URL: its query may hold a token). */
export class ProbeFailure extends Error {
  override readonly name = 'ProbeFailure';
}

export interface Answer {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Dispatcher.ResponseData['body'];
  /** The URL that answered, after redirects. */
  readonly url: URL;
}

export interface PinnedClientOptions {
  readonly lookup: HostLookup;
  readonly allowPrivateAddresses: boolean;
  /** The class of an address that must not be fetched, or null (default `forbiddenAddressClass`). */
  readonly forbidden?: (address: string) => string | null;
  readonly maxRedirects: number;
  /** The whole probe's deadline: DNS, connections, headers and bodies. */
  readonly signal: AbortSignal;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const HEADERS = { 'user-agent': 'model-gateway-media-probe', accept: '*/*', 'accept-encoding': 'identity' };

/** Rejects when the signal aborts: node's DNS lookup cannot be cancelled, the probe must not wait for it. */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** One probe's connections: its own agent, whose sockets go to the pinned addresses only. */
export class PinnedClient {
  private readonly pins = new Map<string, ResolvedAddress>();
  private readonly agent: Agent;

  constructor(private readonly options: PinnedClientOptions) {
    const pinned: LookupFunction = (hostname, lookupOptions, callback) => {
      const pin = this.pins.get(hostname.toLowerCase().replace(/\.+$/, ''));
      if (!pin) return callback(new Error('the probe connects only to addresses it has checked'), '', 4);
      if (lookupOptions.all) (callback as unknown as (e: null, addresses: ResolvedAddress[]) => void)(null, [pin]);
      else callback(null, pin.address, pin.family);
    };
    this.agent = new Agent({ connect: { lookup: pinned }, connections: 2, pipelining: 1 });
  }

  /** The host's address to connect to, after checking all its addresses: one that may not be fetched
   * refuses the URL, even among public ones (a name that also resolves inside is not to be trusted). */
  private async check(url: URL, redirected: boolean): Promise<void> {
    const host = hostOf(url);
    if (isIP(host)) return this.refuseIfForbidden(host, host, redirected);
    if (this.pins.has(host)) return;
    const named = this.options.allowPrivateAddresses ? null : forbiddenNameClass(host);
    if (named) throw new ProbeRefusal(`${redirected ? 'the URL redirects to' : 'the URL names'} ${host}, ${named}; media URLs must be on public addresses`);
    let addresses: readonly ResolvedAddress[];
    try {
      addresses = await abortable(this.options.lookup(host), this.options.signal);
    } catch (error) {
      if (this.options.signal.aborted) throw error;
      throw new ProbeFailure(`the host ${host} could not be resolved (${(error as { code?: string }).code ?? 'DNS error'})`);
    }
    if (addresses.length === 0) throw new ProbeFailure(`the host ${host} has no address`);
    for (const { address } of addresses) this.refuseIfForbidden(host, address, redirected);
    this.pins.set(host, addresses[0]!);
  }

  private refuseIfForbidden(host: string, address: string, redirected: boolean): void {
    if (this.options.allowPrivateAddresses) return;
    const forbidden = (this.options.forbidden ?? forbiddenAddressClass)(address);
    if (forbidden === null) return;
    const where = redirected ? 'the URL redirects to' : 'the URL names';
    const what = host === address ? `${address}, ${forbidden}` : `${host}, which resolves to ${address}, ${forbidden}`;
    throw new ProbeRefusal(`${where} ${what}; media URLs must be on public addresses`);
  }

  /** A request, following up to `maxRedirects` redirects, each hop's address checked like the first. */
  async fetch(start: URL, method: 'HEAD' | 'GET', headers: Record<string, string> = {}): Promise<Answer> {
    let url = start;
    for (let hop = 0; ; hop++) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new ProbeRefusal(`the URL redirects to a ${url.protocol.replace(/:$/, '')} URL; media URLs must be http(s)`);
      await this.check(url, hop > 0);
      const answer = await request(url, { method, headers: { ...HEADERS, ...headers }, signal: this.options.signal, dispatcher: this.agent });
      const location = answer.headers.location;
      if (!REDIRECTS.has(answer.statusCode) || typeof location !== 'string') return { ...answer, url };
      discard(answer.body);
      if (hop >= this.options.maxRedirects) throw new ProbeFailure(`more than ${this.options.maxRedirects} redirects`);
      try {
        url = new URL(location, url);
      } catch {
        throw new ProbeFailure('a redirect to an invalid URL');
      }
    }
  }

  async close(): Promise<void> {
    await this.agent.destroy().catch(() => {});
  }
}
