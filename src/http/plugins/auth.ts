import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Ledger } from '../../commands/ledger';
import { usability, type KeyState } from '../../commands/key/decider';
import type { WalletState } from '../../commands/wallet/state';
import { hashApiKey, isWellFormedApiKey } from '../../secrets/api-key';
import { keyByHash, recordKeyUse } from '../../projections/keys/queries';
import type { Sql } from '../../storage/sql';
import { GatewayError, sendError, sentError } from '../errors';
import { traceAuthentication } from '../../tracing/spans';
import { RecentMap } from './recent-map';

/** Per-route authentication settings, in the route's `config`. */
export interface AuthConfig {
  /** `none`: public. `key`: an API key is required. */
  readonly auth?: 'none' | 'key';
  /** Free endpoints answer at a zero or negative balance. */
  readonly free?: boolean;
  /** Only `Authorization: Bearer` and `x-api-key` are accepted (GET /v1/models). */
  readonly headerKeyOnly?: boolean;
  /** Whether a call counts as the key being used (false for balance and billing views). */
  readonly touchesLastUsed?: boolean;
  /** The route shows the wallet (balance views): read it after every queued command, not
   * from this instance's cache. */
  readonly liveWallet?: boolean;
}

export interface Caller {
  readonly keyId: string;
  readonly accountId: string;
  readonly key: KeyState;
  readonly wallet: WalletState;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
  interface FastifyContextConfig extends AuthConfig {}
}

export const AUTH_MESSAGES = {
  missing:
    'Missing or malformed API key. Send your key in the x-api-key header or as Authorization: Bearer <API_KEY>; keys are 76 characters long and start with sk-.',
  invalid: 'Invalid API key: no such key exists. Check that you copied the whole key.',
  revoked: 'This API key has been revoked or disabled. Create or enable a key in the console.',
  expired: 'This API key has expired (past its expires_at). Create a new key or extend this one in the console.',
  inactive: 'The account that owns this API key is inactive. Contact support to reactivate it.',
} as const;

export const QUOTA_MESSAGE = 'Your balance is exhausted (0 or below). Top up your account to continue; a new key does not help, all keys share the wallet.';

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The spec's lookup order; the first credential present wins, valid or not. */
export function presentedKey(request: FastifyRequest, headerOnly: boolean): string | undefined {
  const bearer = () => {
    const authorization = header(request, 'authorization');
    if (authorization === undefined) return undefined;
    // Only the Bearer scheme carries a key (the spec names no other): any other value is no
    // credential at all, and the request gets the missing-key 401.
    const match = /^Bearer\s+(.*)$/i.exec(authorization.trim());
    return match ? match[1]!.trim() : undefined;
  };
  const xApiKey = header(request, 'x-api-key');
  if (xApiKey !== undefined) return xApiKey.trim();
  if (headerOnly) return bearer();
  const vendor = header(request, 'x-goog-api-key') ?? header(request, 'x-vendor-api-key');
  if (vendor !== undefined) return vendor.trim();
  const query = (request.query as Record<string, unknown> | undefined)?.key;
  if (typeof query === 'string') return query.trim();
  return bearer();
}

const LAST_USED_RESOLUTION_S = 60;

/** Keys whose hash -> id mapping, and whose last `last_used_at` write, this process remembers (the
 * most recently used; a few megabytes). A key forgotten is looked up, or its time written, once more. */
export const KEY_CACHE_LIMIT = 50_000;

export interface AuthOptions {
  readonly ledger: Ledger;
  readonly sql: Sql;
  readonly now?: () => number;
}

/** Authenticates every route that asks for a key, in each protocol's error shape. */
export const authPlugin = fp<AuthOptions>(
  async (app: FastifyInstance, { ledger, sql, now = () => Math.floor(Date.now() / 1000) }) => {
    const lastTouched = new RecentMap<string, number>(KEY_CACHE_LIMIT);
    const byHash = new RecentMap<string, { keyId: string; accountId: string }>(KEY_CACHE_LIMIT);

    async function lookup(hash: string) {
      const cached = byHash.get(hash);
      if (cached) return cached;
      const [row] = await keyByHash(sql, hash);
      if (!row) return null;
      // The hash -> id mapping never changes, so it can be cached; the key's state is read live.
      const found = { keyId: row.key_id, accountId: row.account_id };
      byHash.set(hash, found);
      return found;
    }

    function touch(keyId: string, at: number) {
      const last = lastTouched.get(keyId);
      if (last !== undefined && at - last < LAST_USED_RESOLUTION_S) return;
      lastTouched.set(keyId, at);
      recordKeyUse(sql, keyId, at).catch((error: unknown) => app.log.warn({ err: error, keyId }, 'could not record key last-used time'));
    }

    const keyRefusal = (key: KeyState, at: number) => (key.status === 'none' ? 'revoked' : usability(key, at));
    const walletRefusal = (wallet: WalletState, config: AuthConfig) =>
      wallet.status !== 'active' ? 'inactive' : !config.free && wallet.balance <= 0n ? 'quota' : null;

    /** The whole check, reading what is not cached (a new key, a state older than its freshness
     * window, the live wallet of a balance view) and anything that would refuse. */
    async function authenticate(request: FastifyRequest, reply: FastifyReply, config: AuthConfig, hash: string) {
      const fail = (message: string) => sendError(request, reply, new GatewayError('invalid_api_key', message));
      const found = await lookup(hash);
      if (!found) return fail(AUTH_MESSAGES.invalid);
      const at = now();
      // Cached states first: the reservation decides on the aggregate again, and a refusal
      // is only ever given on a state read from the log just now.
      let key = await ledger.recentKey(found.keyId);
      if (keyRefusal(key, at)) key = await ledger.key(found.keyId);
      const refusal = keyRefusal(key, at);
      if (refusal) return fail(AUTH_MESSAGES[refusal]);
      let wallet = config.liveWallet ? await ledger.wallet(found.accountId) : await ledger.recentWallet(found.accountId);
      if (walletRefusal(wallet, config) && !config.liveWallet) wallet = await ledger.wallet(found.accountId);
      const walletRefused = walletRefusal(wallet, config);
      if (walletRefused === 'inactive') return fail(AUTH_MESSAGES.inactive);
      if (walletRefused === 'quota') {
        // A known key refused for its balance: the caller is known, so the refusal gets its
        // call-log row on billable routes (plugins/refused-calls.ts, which reads the model from the
        // body this hook leaves unread); it is not "used" (last-used).
        request.caller = { keyId: found.keyId, accountId: found.accountId, key, wallet };
        return sendError(request, reply, new GatewayError('quota_exceeded', QUOTA_MESSAGE));
      }
      admit(request, config, found, key, wallet, at);
    }

    function admit(request: FastifyRequest, config: AuthConfig, found: { keyId: string; accountId: string }, key: KeyState, wallet: WalletState, at: number) {
      request.caller = { keyId: found.keyId, accountId: found.accountId, key, wallet };
      if (config.touchesLastUsed !== false) touch(found.keyId, at);
    }

    app.decorateRequest('caller', null);
    // A callback hook: the usual request (a known key, its key and wallet states fresh and
    // passing) is decided without a promise; anything else goes through `authenticate`.
    app.addHook('onRequest', (request, reply, hookDone) => {
      const config = (request.routeOptions.config ?? {}) as AuthConfig;
      if (config.auth !== 'key') return hookDone();
      // The hook's own `done` unless the request is traced (its span ends with the hook).
      const done = traceAuthentication(request, hookDone, () => sentError(request)?.code);
      const raw = presentedKey(request, config.headerKeyOnly === true);
      if (raw === undefined || !isWellFormedApiKey(raw)) {
        sendError(request, reply, new GatewayError('invalid_api_key', AUTH_MESSAGES.missing));
        return done();
      }
      const hash = hashApiKey(raw);
      const found = byHash.get(hash);
      if (found && !config.liveWallet) {
        const at = now();
        const key = ledger.freshKey(found.keyId);
        const wallet = ledger.freshWallet(found.accountId);
        if (key && wallet && !keyRefusal(key, at) && !walletRefusal(wallet, config)) {
          admit(request, config, found, key, wallet, at);
          return done();
        }
      }
      authenticate(request, reply, config, hash).then(() => done(), done);
    });
  },
  { name: 'auth' },
);
