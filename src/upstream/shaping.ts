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
  if (!channel.path_template) return withChannelQuery(channel, protocolPath);
  const q = protocolPath.indexOf('?');
  const template = channel.path_template.replaceAll('{model}', encodeURIComponent(upstreamModel));
  return withChannelQuery(channel, q < 0 ? template : `${template}${protocolPath.slice(q)}`);
}

/**
 * The protocol's path (its own query kept) with the channel's `query` added. Media requests (images, speech,
 * voices, tasks, clip templates) are shaped with this alone: `path_template` is for chat channels only (the
 * config refuses it elsewhere), a media channel speaking several paths (generations and edits, a task's
 * submission and its polls).
 */
export function withChannelQuery(channel: ChannelConfig, protocolPath: string): string {
  if (!channel.query) return protocolPath;
  const q = protocolPath.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : protocolPath.slice(q + 1));
  for (const [name, value] of Object.entries(channel.query)) params.set(name, value);
  const query = params.toString();
  const path = q < 0 ? protocolPath : protocolPath.slice(0, q);
  return query === '' ? path : `${path}?${query}`;
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
