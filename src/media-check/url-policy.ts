import { isIP } from 'node:net';
import { forbiddenAddressClass, forbiddenNameClass, hostOf } from './address';
import type { HostLookup } from './fetch';

/**
 * The one URL policy for every client URL the gateway passes on (docs/media.md, "URL policy"): whoever
 * fetches it (the probe, or an upstream that may sit in the operator's own network), a URL naming a
 * loopback, private, link-local (the metadata address), shared (CGNAT), multicast or reserved address,
 * directly, embedded in IPv6, or by a name that resolves there, is refused before any money moves, unless
 * the config's `media_probe.allow_private_addresses` allows it. A name that does not resolve from here is
 * passed on: the gateway cannot say where it leads, as an unprobed URL.
 */
export interface AddressPolicySettings {
  readonly allowPrivateAddresses: boolean;
  readonly lookup: HostLookup;
  /** The class of an address that must not be fetched, or null (default `forbiddenAddressClass`). */
  readonly forbidden?: ((address: string) => string | null) | undefined;
  /** How long the name's resolution may take; past it the URL is passed on. */
  readonly timeoutMs: number;
}

/** Why `url` must not be passed on (the 400's message after the field's name), or null. */
export async function addressRefusal(url: string, settings: AddressPolicySettings): Promise<string | null> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return 'must be a public http(s) URL';
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return `must be a public http(s) URL, not ${target.protocol.replace(/:$/, '')}`;
  if (settings.allowPrivateAddresses) return null;
  const forbidden = settings.forbidden ?? forbiddenAddressClass;
  const host = hostOf(target);
  const refused = (what: string) => `the URL names ${what}; URLs must be on public addresses`;
  if (isIP(host)) {
    const named = forbidden(host);
    return named ? refused(`${host}, ${named}`) : null;
  }
  const byName = forbiddenNameClass(host);
  if (byName) return refused(`${host}, ${byName}`);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), settings.timeoutMs)));
  try {
    const addresses = await Promise.race([settings.lookup(host).catch(() => null), late]);
    for (const { address } of addresses ?? []) {
      const named = forbidden(address);
      if (named) return refused(`${host}, which resolves to ${address}, ${named}`);
    }
    return null;
  } finally {
    clearTimeout(timer);
  }
}

/** The first of a request's URLs that must not be passed on, as `field: why`; null when all may. */
export async function firstRefusedUrl(admit: (url: string) => Promise<string | null>, urls: readonly { readonly field: string; readonly url: string }[]): Promise<string | null> {
  const verdicts = await Promise.all(urls.map((u) => admit(u.url)));
  const i = verdicts.findIndex((v) => v !== null);
  return i < 0 ? null : `${urls[i]!.field}: ${verdicts[i]}`;
}
