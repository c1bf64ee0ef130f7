/**
 * The recorded coding-agent requests of test/compat/fixtures/ (issue 36, item 4): each file is one request
 * as a client version sent it (method, path with query, headers with the key replaced by `<GATEWAY_KEY>`,
 * body) with the source of its shape, and what a translating channel of each other chat protocol must do
 * with it: answer, naming in `X-Protocol-Warning` exactly the fields it could not carry, or refuse it.
 * WebSocket frames live in fixtures/codex-ws/ and are replayed by their own spec.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatProtocol } from '../../src/config/schema';

/** What a channel of another protocol does with the request. */
export type TranslatedOutcome =
  /** Answers; `warning` is the exact list of X-Protocol-Warning (empty: no header). */
  | { readonly warning: readonly string[] }
  /** Refuses before any upstream call, with this error code in the client's error shape. */
  | { readonly refused: string };

export interface AgentFixture {
  /** `<client>/<file name>`. */
  readonly name: string;
  readonly client: 'claude-code' | 'codex';
  readonly version: string;
  readonly source: string;
  readonly request: {
    readonly method: 'POST';
    readonly path: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly body: Readonly<Record<string, unknown>>;
  };
  /** One outcome per chat protocol other than the client's (token counts have none: they are estimated). */
  readonly translated?: Partial<Record<ChatProtocol, TranslatedOutcome>>;
}

/** The key placeholder of the recorded headers. */
export const KEY_PLACEHOLDER = '<GATEWAY_KEY>';

const ROOT = join(import.meta.dirname, 'fixtures');
/** The HTTP fixtures; codex-ws/ holds WebSocket frames. */
const HTTP_CLIENTS = ['claude-code', 'codex'] as const;

export function agentFixtures(): AgentFixture[] {
  return HTTP_CLIENTS.flatMap((client) =>
    readdirSync(join(ROOT, client))
      .filter((file) => file.endsWith('.json'))
      .sort()
      .map((file) => ({ name: `${client}/${file.replace(/\.json$/, '')}`, ...(JSON.parse(readFileSync(join(ROOT, client, file), 'utf8')) as Omit<AgentFixture, 'name'>) })),
  );
}

/** The endpoint a recorded path belongs to. */
export type Endpoint = 'messages' | 'count-tokens' | 'responses' | 'chat-completions';

export function endpointOf(path: string): Endpoint {
  const pathname = path.split('?')[0];
  if (pathname === '/v1/messages') return 'messages';
  if (pathname === '/v1/messages/count_tokens') return 'count-tokens';
  if (pathname === '/v1/responses') return 'responses';
  if (pathname === '/v1/chat/completions') return 'chat-completions';
  throw new Error(`no endpoint for the recorded path ${path}`);
}

export const protocolOf = (endpoint: Endpoint): ChatProtocol => (endpoint === 'count-tokens' ? 'messages' : endpoint);
