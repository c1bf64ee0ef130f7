import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../../commands/ledger';
import type { KeyState } from '../../commands/key/decider';
import { MINIMUM_TOPUP } from '../../commands/wallet/decider';
import { available, type WalletState } from '../../commands/wallet/state';
import type { ModelRegistry } from '../../config/registry';
import { UsdString } from '../../config/schema';
import { UnreadableEventError, decodeRecorded, walletStream } from '../../events/catalog';
import { ChannelGroup, INT32_MAX } from '../../events/catalog/codec';
import type { EventStore, Position } from '../../events/store/port';
import { formatUsd, parseUsd } from '../../money/usd';
import type { ProjectionRunner } from '../../projections/runner/runner';
import type { Sql } from '../../storage/sql';
import { databaseUnreachable } from '../../storage/outage';
import { storageUnavailable } from '../errors';
import type { IdempotencyStore } from '../../idempotency/store';
import { pageSizeQuery as pageLimit, RevisionQuery } from '../intake/numbers';
import type { RouteDoc } from '../openapi/route-doc';
import { clientErrorOf } from '../intake/plugin';
import { AdminError, fromDomain, parse } from './admin-error';
import { operatorText } from './operator-text';
import { adminIdempotency, type AdminReplay } from './idempotency';
import { knowledgeAdminRoutes, type KnowledgeAdminOptions } from './knowledge';
import { LOG_PAGE_BYTES, logRoutes, withinBytes } from './logs';
import { clipText } from '../../projections/call-log/bounds';
import { rerateRoutes } from './rerate';
import { consoleLinkRoutes } from './console-links';
import type { ConsoleSessions } from '../../console/sessions';
import { enterpriseAdminRoutes } from './enterprise';
import type { Enterprises } from '../../commands/enterprise/service';
import type { KnowledgeQueries } from '../../projections/knowledge/queries';
import { accountIdPage } from '../../projections/accounts/queries';
import { accountKeyPage, keyUse } from '../../projections/keys/queries';
import { channelAdminRoutes } from './channels';
import type { ChannelHealthAdmin } from '../../channels/admin';

export interface AdminOptions extends KnowledgeAdminOptions {
  readonly now?: () => number;
  readonly adminToken: string;
  readonly ledger: Ledger;
  readonly runner: ProjectionRunner;
  readonly sql: Sql;
  readonly store: EventStore;
  readonly registry: ModelRegistry;
  /** Where `Idempotency-Key` claims of admin POSTs are kept (scope `admin`). */
  readonly idempotency: IdempotencyStore;
  /** Console sign-in links (`POST /accounts/:id/login-link`). */
  readonly consoleSessions: ConsoleSessions;
  readonly publicBaseUrl?: string | undefined;
  readonly enterprises: Enterprises;
  readonly knowledgeQueries: KnowledgeQueries;
  /** Channel health (src/channels): `/channels` routes when present. */
  readonly channelHealth?: ChannelHealthAdmin;
}

const Timestamp = z.number().int().nonnegative();
/** Names the operator (or a console user) chooses are stored in events and rows and shown in
 * every list: longer ones are refused, not cut (docs/operations.md, "Bounded texts"). */
const NAME_MAX = 200;
/** The largest amount one admin command moves or caps: a billion USD. The ledger holds ±9.2 billion
 * (Postgres bigint of nano-USD); an amount past this is a typo, refused with 400 rather than
 * refused by the log's append check with a 500. */
export const MAX_ADMIN_AMOUNT_USD = '1000000000';
const AdminAmount = UsdString.refine((v) => parseUsd(v) <= parseUsd(MAX_ADMIN_AMOUNT_USD), { message: `at most ${MAX_ADMIN_AMOUNT_USD} USD` });
const KeyFields = z.object({
  name: operatorText(NAME_MAX),
  // Model ids of the catalogue (each is checked): a few hundred at most.
  allowed_models: z.array(z.string().min(1).max(200)).max(1000).nullable().optional(),
  expires_at: Timestamp.nullable().optional(),
  enabled: z.boolean().optional(),
  spend_cap_usd: AdminAmount.nullable().optional(),
  group: ChannelGroup.nullable().optional().describe("The channel group the key's calls are routed to (wins over the account's); null: none."),
});
const CreateKey = KeyFields.strict();
const PatchKey = KeyFields.partial().strict();
const GroupField = ChannelGroup.nullable().describe("The channel group the account's calls are routed to (a key's own group wins); null: none, every channel.");
const CreateAccount = z.object({ name: operatorText(NAME_MAX), group: GroupField.optional() }).strict();
const SetGroup = z.object({ group: GroupField }).strict();
const TopUp = z
  .object({
    amount_usd: AdminAmount.describe(`USD, a decimal string: at least the minimum top-up (${formatUsd(MINIMUM_TOPUP)}), at most ${MAX_ADMIN_AMOUNT_USD}.`),
    reference: operatorText(200).describe('Your reference (an invoice number): the same reference and amount again is the same top-up.'),
  })
  .strict();
/** What the accounts table holds (a larger limit is refused before it reaches the log). */
const Limit = z.number().int().positive().max(INT32_MAX).nullable().describe('null: unlimited');
const Limits = z.object({ rpm: Limit, concurrency: Limit }).strict();
const Deactivate = z.object({ reason: z.string().max(500).optional() }).strict().optional();

function accountView(accountId: string, state: WalletState) {
  return {
    id: accountId,
    name: state.name,
    status: state.status,
    balance_usd: formatUsd(state.balance),
    held_usd: formatUsd(state.held),
    available_usd: formatUsd(available(state)),
    limits: state.limits,
    group: state.group,
    created_at: state.createdAt,
  };
}

function keyView(state: KeyState, extra: { last_used_at?: number | null; used_usd?: string } = {}) {
  return {
    id: state.keyId,
    account_id: state.accountId,
    name: state.settings.name,
    prefix: state.prefix,
    allowed_models: state.settings.allowed_models,
    expires_at: state.settings.expires_at,
    enabled: state.settings.enabled,
    spend_cap_usd: state.settings.spend_cap === null ? null : formatUsd(state.settings.spend_cap),
    group: state.settings.group ?? null,
    status: state.status,
    revealable: state.revealable,
    created_at: state.createdAt,
    agent_id: state.agentId,
    last_used_at: extra.last_used_at ?? null,
    used_usd: extra.used_usd ?? '0.00',
  };
}

/** The admin API's word for a stream of the log that cannot be read: the event and why. */
const unreadable = (error: UnreadableEventError) => ({
  code: 'account_unavailable',
  message: `${error.message}; see gateway ledger verify --parked`,
});
const AccountsQuery = z.looseObject({ limit: pageLimit(100, 1000), after: z.string().optional().describe('The `next_cursor` of the previous page.') });
/** `{created_at}:{key_id}` of the last key of the previous page. */
const KeysQuery = z.looseObject({
  limit: pageLimit(100, 1000),
  after: z
    .string()
    .regex(/^(\d{1,15}:key_\w{1,64})?$/, 'is not a cursor this API returned')
    .transform((text) => (text === '' ? undefined : { createdAt: text.split(':')[0]!, keyId: text.slice(text.indexOf(':') + 1) }))
    .optional()
    .describe('The `next_cursor` of the previous page.'),
});
const LedgerQuery = z.looseObject({
  from_revision: RevisionQuery.describe('The first event (its revision in the wallet stream; default 0).'),
  limit: pageLimit(1000, 10_000),
});

const ACCOUNT = 'The account: `{id, name, status, balance_usd, held_usd, available_usd, limits, group, created_at}`.';
const KEY = 'The key: `{id, account_id, name, prefix, allowed_models, expires_at, enabled, spend_cap_usd, group, status, revealable, created_at, agent_id, last_used_at, used_usd}`.';
const NO_ACCOUNT = { 404: 'No such account: `account_not_found`.' };
const NO_KEY = { 404: 'No such key: `key_not_found`.' };

const adminDoc = (tag: 'admin-accounts' | 'admin-keys', operationId: string, summary: string, responses: RouteDoc['responses'], extra: Partial<RouteDoc> = {}): RouteDoc => ({
  operationId,
  summary,
  tags: [tag],
  responses,
  ...extra,
});

const DOCS = {
  createAccount: adminDoc('admin-accounts', 'createAccount', 'Open an account', { 201: { description: ACCOUNT } }, { body: { json: CreateAccount } }),
  listAccounts: adminDoc('admin-accounts', 'listAccounts', 'List accounts, by id', { 200: { description: '`{data: [account], next_cursor}`; an account whose log cannot be read is listed as `unavailable`.' } }, { query: AccountsQuery }),
  getAccount: adminDoc('admin-accounts', 'getAccount', 'One account', { 200: { description: ACCOUNT } }, { errors: NO_ACCOUNT }),
  topUp: adminDoc('admin-accounts', 'topUpAccount', 'Top up an account (idempotent on `reference`)', { 201: { description: '`{topup_id, amount_usd, account}`.' } }, {
    body: { json: TopUp },
    errors: {
      400: `Below the minimum top-up of ${formatUsd(MINIMUM_TOPUP)} USD: \`topup_below_minimum\`.`,
      ...NO_ACCOUNT,
      409: 'The reference was used for another amount (`topup_reference_conflict`), or the account is inactive.',
    },
  }),
  setLimits: adminDoc('admin-accounts', 'setAccountLimits', "Set an account's requests per minute and concurrency (null: unlimited)", { 200: { description: ACCOUNT } }, {
    body: { json: Limits },
    errors: NO_ACCOUNT,
  }),
  setGroup: adminDoc('admin-accounts', 'setAccountGroup', "Bind an account to a channel group (null: unbind)", { 200: { description: ACCOUNT } }, {
    body: { json: SetGroup },
    errors: NO_ACCOUNT,
  }),
  deactivate: adminDoc('admin-accounts', 'deactivateAccount', 'Deactivate an account (its keys stop working)', { 200: { description: ACCOUNT } }, {
    body: { json: Deactivate, required: false },
    errors: NO_ACCOUNT,
  }),
  reactivate: adminDoc('admin-accounts', 'reactivateAccount', 'Reactivate an account', { 200: { description: ACCOUNT } }, { errors: NO_ACCOUNT }),
  createKey: adminDoc('admin-keys', 'createKey', 'Issue an API key (the raw key is in the answer)', { 201: { description: `${KEY} Plus \`key\`: the raw key.` } }, {
    body: { json: CreateKey },
    errors: NO_ACCOUNT,
  }),
  listKeys: adminDoc('admin-keys', 'listKeys', "An account's keys, oldest first", { 200: { description: '`{data: [key], next_cursor}`.' } }, { query: KeysQuery, errors: NO_ACCOUNT }),
  patchKey: adminDoc('admin-keys', 'updateKey', "Change a key's settings", { 200: { description: KEY } }, {
    body: { json: PatchKey },
    errors: { ...NO_KEY, 409: 'The key is revoked: `key_revoked`.' },
  }),
  revokeKey: adminDoc('admin-keys', 'revokeKey', 'Revoke a key', { 200: { description: KEY } }, { errors: NO_KEY }),
  deleteKey: adminDoc('admin-keys', 'deleteKey', 'Delete a key', { 200: { description: '`{id, deleted: true}`.' } }, { errors: NO_KEY }),
  revealKey: adminDoc('admin-keys', 'revealKey', 'The raw key again, from the vault', { 200: { description: '`{id, key}`.' } }, {
    errors: { ...NO_KEY, 409: 'The key cannot be revealed (`key_not_revealable`) or is revoked.' },
  }),
  ledger: adminDoc('admin-accounts', 'getAccountLedger', "An account's ledger: the wallet's events", { 200: { description: '`{account_id, data: [{revision, event_id, type, data, created_at}], next_cursor}`.' } }, {
    query: LedgerQuery,
    errors: NO_ACCOUNT,
  }),
};

function tokenMatches(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The operator's API under /admin/v1: accounts, top-ups, limits, keys and ledger.
 * Commands answer after the projections have applied them, so a read that follows
 * (a key list, an authenticated call with the new key) sees the change. */
export function adminRoutes(options: AdminOptions) {
  const { adminToken, ledger, runner, sql, store, registry } = options;

  return async (app: FastifyInstance) => {
    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      const authorization = request.headers.authorization ?? '';
      const match = /^Bearer\s+(.+)$/i.exec(authorization);
      if (!match || !tokenMatches(match[1]!.trim(), adminToken))
        return reply.code(401).send({ error: { code: 'unauthorized', message: 'admin API: send Authorization: Bearer <ADMIN_TOKEN>' } });
    });

    app.setErrorHandler((error, request, reply) => {
      if (error instanceof UnreadableEventError) {
        request.log.error({ err: error }, 'a stream of the log cannot be read');
        return reply.code(503).send({ error: unreadable(error) });
      }
      // The intake's refusals (a body too large, not JSON, a NUL in an id) keep their own code.
      const refusal = error instanceof AdminError ? error : clientErrorOf(error, request);
      if (refusal) return reply.code(refusal.status).send({ error: { code: refusal.code, message: refusal.message } });
      if (databaseUnreachable(error)) {
        request.log.warn({ err: error }, 'admin request failed: the database cannot be reached');
        const outage = storageUnavailable(request.id);
        return reply.code(outage.status).headers(outage.headers).send({ error: { code: outage.code, message: outage.message } });
      }
      request.log.error({ err: error }, 'admin request failed');
      return reply.code(500).send({ error: { code: 'internal_error', message: 'internal error' } });
    });

    adminIdempotency(app, options.idempotency);

    const settled = async (position: Position | null) => runner.waitFor(position);
    await app.register(knowledgeAdminRoutes(options));
    await app.register(logRoutes(sql, options.now ?? (() => Math.floor(Date.now() / 1000))));
    await app.register(rerateRoutes({ ledger, runner, sql, registry }));
    await app.register(consoleLinkRoutes({ ledger, consoleSessions: options.consoleSessions, settled, publicBaseUrl: options.publicBaseUrl }));
    if (options.channelHealth) await app.register(channelAdminRoutes(options.channelHealth, sql, runner));

    async function existingAccount(accountId: string) {
      const state = await ledger.wallet(accountId);
      if (state.status === 'none') throw new AdminError(404, 'account_not_found', `account ${accountId} not found`);
      return state;
    }

    function checkModels(models: readonly string[] | null | undefined) {
      const unknown = (models ?? []).filter((m) => !registry.resolve(m));
      if (unknown.length) throw new AdminError(400, 'invalid_request', clipText(`allowed_models: unknown model ids: ${unknown.join(', ')}`, 2000));
    }

    /** Each key's last use and spend, as the key views show them. */
    async function keyExtras(keyIds: string[]) {
      const use = await keyUse(sql, keyIds);
      return new Map([...use].map(([keyId, u]) => [keyId, { last_used_at: u.lastUsedAt, used_usd: formatUsd(u.spent) }]));
    }

    app.post('/accounts', { config: { openapi: DOCS.createAccount } }, async (request, reply) => {
      const body = parse(CreateAccount, request.body);
      const result = await ledger.openAccount(body.name, 'admin', body.group ?? null);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return reply.code(201).send(accountView(result.accountId, result.state));
    });

    app.get<{ Querystring: z.output<typeof AccountsQuery> }>('/accounts', { config: { openapi: DOCS.listAccounts } }, async (request) => {
      const { ids, more } = await accountIdPage(sql, request.query.after ?? '', request.query.limit);
      // An account whose stream cannot be read is listed as unavailable: the list is everyone's.
      const data = await Promise.all(
        ids.map(async (accountId) => {
          try {
            return accountView(accountId, await ledger.wallet(accountId));
          } catch (error) {
            if (!(error instanceof UnreadableEventError)) throw error;
            return { id: accountId, status: 'unavailable', error: unreadable(error) };
          }
        }),
      );
      return { data, next_cursor: more ? ids[ids.length - 1]! : null };
    });

    app.get<{ Params: { id: string } }>('/accounts/:id', { config: { openapi: DOCS.getAccount } }, async (request) => {
      return accountView(request.params.id, await existingAccount(request.params.id));
    });

    app.post<{ Params: { id: string } }>('/accounts/:id/topups', { config: { openapi: DOCS.topUp } }, async (request, reply) => {
      const body = parse(TopUp, request.body);
      const result = await ledger.topUp(request.params.id, parseUsd(body.amount_usd), body.reference);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return reply.code(201).send({ topup_id: result.topupId, amount_usd: formatUsd(parseUsd(body.amount_usd)), account: accountView(request.params.id, result.state) });
    });

    app.put<{ Params: { id: string } }>('/accounts/:id/limits', { config: { openapi: DOCS.setLimits } }, async (request) => {
      const body = parse(Limits, request.body);
      const result = await ledger.setLimits(request.params.id, body.rpm, body.concurrency);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return accountView(request.params.id, result.state);
    });

    app.put<{ Params: { id: string } }>('/accounts/:id/group', { config: { openapi: DOCS.setGroup } }, async (request) => {
      const body = parse(SetGroup, request.body);
      const result = await ledger.setGroup(request.params.id, body.group);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return accountView(request.params.id, result.state);
    });

    app.post<{ Params: { id: string } }>('/accounts/:id/deactivate', { config: { openapi: DOCS.deactivate } }, async (request) => {
      const body = parse(Deactivate, request.body ?? undefined);
      const result = await ledger.deactivate(request.params.id, body?.reason ?? 'deactivated by operator');
      if (!result.ok) throw fromDomain(result.error);
      // The console also checks the account on every request; ending its sessions here records it now.
      await options.consoleSessions.endAccountSessions(request.params.id);
      await settled(result.position);
      return accountView(request.params.id, result.state);
    });

    app.post<{ Params: { id: string } }>('/accounts/:id/reactivate', { config: { openapi: DOCS.reactivate } }, async (request) => {
      const result = await ledger.reactivate(request.params.id);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return accountView(request.params.id, result.state);
    });

    // A replayed key creation gives the key again, revealed from the vault: the idempotency
    // store never holds a raw key.
    const newKeyReplay: AdminReplay = {
      keep: (body) => JSON.stringify({ ...(JSON.parse(body) as object), key: null }),
      async restore(body) {
        const answer = JSON.parse(body) as { id: string };
        const revealed = await ledger.revealKey(answer.id);
        return revealed.ok ? JSON.stringify({ ...answer, key: revealed.raw }) : null;
      },
    };

    await app.register(
      enterpriseAdminRoutes({
        enterprises: options.enterprises,
        runner,
        sql,
        registry,
        knowledgeQueries: options.knowledgeQueries,
        newKeyReplay,
        keyView: async (keyId) => keyView(await ledger.key(keyId), (await keyExtras([keyId])).get(keyId)),
      }),
    );

    app.post<{ Params: { id: string } }>('/accounts/:id/keys', { config: { adminReplay: newKeyReplay, openapi: DOCS.createKey } }, async (request, reply) => {
      const body = parse(CreateKey, request.body);
      checkModels(body.allowed_models);
      await existingAccount(request.params.id);
      const result = await ledger.issueKey(request.params.id, {
        name: body.name,
        allowed_models: body.allowed_models ?? null,
        expires_at: body.expires_at ?? null,
        enabled: body.enabled ?? true,
        spend_cap: body.spend_cap_usd == null ? null : parseUsd(body.spend_cap_usd),
        group: body.group ?? null,
      });
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return reply.code(201).send({ ...keyView(result.state), key: result.raw });
    });

    app.get<{ Params: { id: string }; Querystring: z.output<typeof KeysQuery> }>('/accounts/:id/keys', { config: { openapi: DOCS.listKeys } }, async (request) => {
      await existingAccount(request.params.id);
      const { keys, more } = await accountKeyPage(sql, request.params.id, request.query.after, request.query.limit);
      const extras = await keyExtras(keys.map((k) => k.keyId));
      const data = await Promise.all(keys.map(async (k) => keyView(await ledger.key(k.keyId), extras.get(k.keyId))));
      const last = keys[keys.length - 1];
      return { data, next_cursor: more && last ? `${last.createdAt}:${last.keyId}` : null };
    });

    app.patch<{ Params: { id: string } }>('/keys/:id', { config: { openapi: DOCS.patchKey } }, async (request) => {
      const body = parse(PatchKey, request.body);
      checkModels(body.allowed_models);
      const result = await ledger.updateKey(request.params.id, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.allowed_models !== undefined ? { allowed_models: body.allowed_models } : {}),
        ...(body.expires_at !== undefined ? { expires_at: body.expires_at } : {}),
        ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
        ...(body.spend_cap_usd !== undefined ? { spend_cap: body.spend_cap_usd === null ? null : parseUsd(body.spend_cap_usd) } : {}),
        ...(body.group !== undefined ? { group: body.group } : {}),
      });
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      const extras = await keyExtras([request.params.id]);
      return keyView(result.state, extras.get(request.params.id));
    });

    app.post<{ Params: { id: string } }>('/keys/:id/revoke', { config: { openapi: DOCS.revokeKey } }, async (request) => {
      const result = await ledger.revokeKey(request.params.id, 'revoked by operator');
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return keyView(result.state);
    });

    app.delete<{ Params: { id: string } }>('/keys/:id', { config: { openapi: DOCS.deleteKey } }, async (request) => {
      const result = await ledger.deleteKey(request.params.id);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return { id: request.params.id, deleted: true };
    });

    app.get<{ Params: { id: string } }>('/keys/:id/reveal', { config: { openapi: DOCS.revealKey } }, async (request) => {
      const result = await ledger.revealKey(request.params.id);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return { id: request.params.id, key: result.raw };
    });

    app.get<{ Params: { id: string }; Querystring: z.output<typeof LedgerQuery> }>('/accounts/:id/ledger', { config: { openapi: DOCS.ledger } }, async (request) => {
      await existingAccount(request.params.id);
      const { limit } = request.query;
      const from = request.query.from_revision ?? 0n;
      const events = await store.readStream(walletStream(request.params.id), { fromRevision: from, maxCount: limit + 1 });
      const entries = events.slice(0, limit).map((e) => ({
        revision: Number(e.revision),
        event_id: e.id,
        type: e.type,
        data: JSON.parse(JSON.stringify(decodeRecorded(e).data, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))) as unknown,
        created_at: Math.floor(e.createdAt.getTime() / 1000),
      }));
      // Bounded in bytes as well as in events, like the call log's pages.
      const data = withinBytes(entries, LOG_PAGE_BYTES, (entry) => Buffer.byteLength(JSON.stringify(entry)));
      return {
        account_id: request.params.id,
        data,
        next_cursor: events.length > data.length ? String(data[data.length - 1]!.revision + 1) : null,
      };
    });
  };
}
