import { ProxyAgent, type Dispatcher } from 'undici';
import type { ChannelConfig } from '../config/schema';

/** The headers the protocols carry a key in: replaced when a channel names its own (`auth_header`). */
const KEY_HEADERS = ['authorization', 'x-api-key', 'x-goog-api-key'];

/**
 * A channel's request as its config shapes it (docs/channels.md): the protocol's path, or the channel's
 * `path_template` with `{model}` (the upstream model id), the protocol's own query kept and the channel's
 * `query` added; the protocol's auth headers, or the key in `auth_header` with `auth_scheme`; then the
 * channel's extra `headers`.
 */
export function shapedPath(channel: ChannelConfig, protocolPath: string, upstreamModel: string): string {
  const q = protocolPath.indexOf('?');
  const ownPath = q < 0 ? protocolPath : protocolPath.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : protocolPath.slice(q + 1));
  for (const [name, value] of Object.entries(channel.query ?? {})) params.set(name, value);
  const path = channel.path_template ? channel.path_template.replaceAll('{model}', encodeURIComponent(upstreamModel)) : ownPath;
  const query = params.toString();
  return query === '' ? path : `${path}?${query}`;
}

/**
 * A media request's path (images, speech, voices, tasks, clip templates) with the channel's `query` added.
 * `path_template` is for chat channels only (the config refuses it elsewhere): a media channel speaks
 * several paths (generations and edits, a task's submission and its polls).
 */
export function shapedMediaPath(channel: ChannelConfig, protocolPath: string): string {
  return shapedPath({ ...channel, path_template: undefined }, protocolPath, '');
}

export function shapedHeaders(channel: ChannelConfig, protocolAuth: Record<string, string>): Record<string, string> {
  let headers = protocolAuth;
  if (channel.auth_header !== undefined || channel.auth_scheme !== undefined) {
    const name = (channel.auth_header ?? 'authorization').toLowerCase();
    const scheme = channel.auth_scheme ?? (name === 'authorization' ? 'Bearer' : '');
    headers = Object.fromEntries(Object.entries(protocolAuth).filter(([h]) => !KEY_HEADERS.includes(h.toLowerCase())));
    headers[name] = scheme === '' ? channel.api_key : `${scheme} ${channel.api_key}`;
  }
  return channel.headers ? { ...headers, ...lowerCased(channel.headers) } : headers;
}

const lowerCased = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));

const proxies = new Map<string, ProxyAgent>();

/** The dispatcher of a channel with an HTTP(S) `proxy` (one keep-alive ProxyAgent per proxy URL); else null. */
export function channelDispatcher(channel: ChannelConfig): Dispatcher | null {
  if (!channel.proxy) return null;
  let agent = proxies.get(channel.proxy);
  if (!agent) {
    agent = new ProxyAgent({ uri: channel.proxy, keepAliveTimeout: 30_000 });
    proxies.set(channel.proxy, agent);
  }
  return agent;
}
