import { isIP } from 'node:net';

/**
 * Which addresses a probe must not connect to unless the config allows private addresses: fetching a
 * client's URL is a request made from inside the gateway's network (SSRF), so anything that is not a
 * public unicast address is refused, named by its class so the 400 says why.
 */

interface Range {
  readonly base: bigint;
  readonly bits: number;
  readonly name: string;
}

const v4 = (text: string): bigint => text.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);

const range4 = (cidr: string, name: string): Range => {
  const [base, bits] = cidr.split('/') as [string, string];
  return { base: v4(base), bits: Number(bits), name };
};

// Most specific first: the metadata address is link-local too, but its own name says more.
const V4_RANGES: readonly Range[] = [
  range4('169.254.169.254/32', 'the cloud metadata address (link-local)'),
  range4('0.0.0.0/8', 'an unspecified address'),
  range4('127.0.0.0/8', 'a loopback address'),
  range4('10.0.0.0/8', 'a private address (RFC 1918)'),
  range4('172.16.0.0/12', 'a private address (RFC 1918)'),
  range4('192.168.0.0/16', 'a private address (RFC 1918)'),
  range4('100.64.0.0/10', 'a shared address (carrier-grade NAT, RFC 6598)'),
  range4('169.254.0.0/16', 'a link-local address'),
  range4('224.0.0.0/4', 'a multicast address'),
  range4('240.0.0.0/4', 'a reserved address'),
];

const within = (value: bigint, width: number, range: Range) => value >> BigInt(width - range.bits) === range.base >> BigInt(width - range.bits);

function class4(value: bigint): string | null {
  return V4_RANGES.find((r) => within(value, 32, r))?.name ?? null;
}

/** An IPv6 address as a 128-bit number (a trailing dotted IPv4 part and a zone id accepted). */
function v6(text: string): bigint {
  let address = text.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted) {
    const n = v4(dotted[1]!);
    address = `${address.slice(0, -dotted[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = address.includes('::') ? (address.split('::') as [string, string]) : [address, null];
  const left = head === '' ? [] : head.split(':');
  const right = tail === null || tail === '' ? [] : tail.split(':');
  const groups = tail === null ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
}

const range6 = (cidr: string, name: string): Range => {
  const [base, bits] = cidr.split('/') as [string, string];
  return { base: v6(base), bits: Number(bits), name };
};

const V6_RANGES: readonly Range[] = [
  range6('::/128', 'an unspecified address'),
  range6('::1/128', 'a loopback address'),
  range6('fc00::/7', 'a private address (unique local, fc00::/7)'),
  range6('fe80::/10', 'a link-local address'),
  range6('fec0::/10', 'a private address (site-local)'),
  range6('ff00::/8', 'a multicast address'),
];

/** Prefixes whose last 32 bits are an IPv4 address that a connection may end up at: IPv4-mapped,
 * IPv4-translated (`::ffff:0:a.b.c.d`, RFC 2765; what `http://[::ffff:0:127.0.0.1]/` names), IPv4-compatible
 * (deprecated, still routed by some stacks) and the NAT64 well-known prefix. */
const EMBEDDING_V4 = [range6('::ffff:0:0/96', ''), range6('::ffff:0:0:0/96', ''), range6('::/96', ''), range6('64:ff9b::/96', '')];

/** The class of an address a probe must not fetch from (`a loopback address`, …), or null for a
 * public one. Something that is no IP address at all is refused too. */
export function forbiddenAddressClass(address: string): string | null {
  const ipVersion = isIP(address.replace(/%.*$/, ''));
  if (ipVersion === 4) return class4(v4(address));
  if (ipVersion !== 6) return 'not an IP address';
  const value = v6(address);
  const own = V6_RANGES.find((r) => within(value, 128, r));
  if (own) return own.name;
  if (EMBEDDING_V4.some((r) => within(value, 128, r))) return class4(value & 0xffffffffn);
  return null;
}

/** A URL's host as a resolver sees it: without the brackets of an IPv6 literal, lower-case, and without
 * the trailing dots of a fully qualified name (`localhost.` is `localhost`; a resolver that refuses the
 * dot would otherwise let the name pass unchecked to an upstream whose resolver does not). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.+$/, '');
}

/** The class of a host name that is refused without asking DNS: `localhost` and its sub-domains are
 * loopback whatever a resolver says (RFC 6761). */
export function forbiddenNameClass(host: string): string | null {
  return host === 'localhost' || host.endsWith('.localhost') ? 'a loopback name' : null;
}
