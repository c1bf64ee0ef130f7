/** The admin API's keys: issue (idempotent, the raw key revealed again on a replay), list an account's,
 * change, revoke, delete and reveal (registered by `routes.ts` under `/admin/v1`). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../../commands/ledger';
import type { KeyState } from '../../commands/key/decider';
import type { ModelRegistry } from '../../config/registry';
import { ChannelGroup } from '../../events/catalog/codec';
import { formatUsd, parseUsd } from '../../money/usd';
import { clipText } from '../../projections/call-log/bounds';
import { accountKeyPage, keyUse } from '../../projections/keys/queries';
import type { Sql } from '../../storage/sql';
import { pageSizeQuery as pageLimit } from '../intake/numbers';
import { AdminError, fromDomain, parse } from './admin-error';
import type { AdminReplay } from './idempotency';
import { operatorText } from './operator-text';
import { AdminAmount, adminDoc, existingAccount, NAME_MAX, NO_ACCOUNT, Timestamp, type Settled } from './fields';

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

const KEY = 'The key: `{id, account_id, name, prefix, allowed_models, expires_at, enabled, spend_cap_usd, group, status, revealable, created_at, agent_id, last_used_at, used_usd}`.';
const NO_KEY = { 404: 'No such key: `key_not_found`.' };

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

const DOCS = {
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
};

/** Each key's last use and spend, as the key views show them. */
export async function keyExtras(sql: Sql, keyIds: string[]) {
  const use = await keyUse(sql, keyIds);
  return new Map([...use].map(([keyId, u]) => [keyId, { last_used_at: u.lastUsedAt, used_usd: formatUsd(u.spent) }]));
}

/** A key's view by id, with its last use and spend (the enterprise routes answer with it). */
export const keyViewById = async (ledger: Ledger, sql: Sql, keyId: string) => keyView(await ledger.key(keyId), (await keyExtras(sql, [keyId])).get(keyId));

// A replayed key creation gives the key again, revealed from the vault: the idempotency
// store never holds a raw key.
export function newKeyReplay(ledger: Ledger): AdminReplay {
  return {
    keep: (body) => JSON.stringify({ ...(JSON.parse(body) as object), key: null }),
    async restore(body) {
      const answer = JSON.parse(body) as { id: string };
      const revealed = await ledger.revealKey(answer.id);
      return revealed.ok ? JSON.stringify({ ...answer, key: revealed.raw }) : null;
    },
  };
}

export interface KeyAdminOptions {
  readonly ledger: Ledger;
  readonly sql: Sql;
  readonly registry: ModelRegistry;
  readonly settled: Settled;
  readonly newKeyReplay: AdminReplay;
}

export function keyAdminRoutes(options: KeyAdminOptions) {
  const { ledger, sql, registry, settled, newKeyReplay } = options;
  return async (app: FastifyInstance) => {
    function checkModels(models: readonly string[] | null | undefined) {
      const unknown = (models ?? []).filter((m) => !registry.resolve(m));
      if (unknown.length) throw new AdminError(400, 'invalid_request', clipText(`allowed_models: unknown model ids: ${unknown.join(', ')}`, 2000));
    }

    app.post<{ Params: { id: string } }>('/accounts/:id/keys', { config: { adminReplay: newKeyReplay, openapi: DOCS.createKey } }, async (request, reply) => {
      const body = parse(CreateKey, request.body);
      checkModels(body.allowed_models);
      await existingAccount(ledger, request.params.id);
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
      await existingAccount(ledger, request.params.id);
      const { keys, more } = await accountKeyPage(sql, request.params.id, request.query.after, request.query.limit);
      const extras = await keyExtras(sql, keys.map((k) => k.keyId));
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
      const extras = await keyExtras(sql, [request.params.id]);
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
  };
}
