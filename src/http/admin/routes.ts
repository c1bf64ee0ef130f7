import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../../commands/ledger';
import type { KeyState } from '../../commands/key/decider';
import { available, type WalletState } from '../../commands/wallet/decider';
import type { ModelRegistry } from '../../config/registry';
import { UsdString } from '../../config/schema';
import { decodeRecorded, walletStream } from '../../events/catalog';
import type { EventStore, Position } from '../../events/store/port';
import { formatUsd, parseUsd } from '../../money/usd';
import type { ProjectionRunner } from '../../projections/runner/runner';
import type { Sql } from '../../storage/sql';
import { revisionParam } from '../intake/numbers';
import { clientErrorOf } from '../intake/plugin';
import { AdminError, fromDomain, parse } from './admin-error';
import { knowledgeAdminRoutes, type KnowledgeAdminOptions } from './knowledge';
import { logRoutes } from './logs';

export interface AdminOptions extends KnowledgeAdminOptions {
  readonly now?: () => number;
  readonly adminToken: string;
  readonly ledger: Ledger;
  readonly runner: ProjectionRunner;
  readonly sql: Sql;
  readonly store: EventStore;
  readonly registry: ModelRegistry;
}

const Timestamp = z.number().int().nonnegative();
const KeyFields = z.object({
  name: z.string().trim().min(1).max(200),
  allowed_models: z.array(z.string().min(1)).nullable().optional(),
  expires_at: Timestamp.nullable().optional(),
  enabled: z.boolean().optional(),
  spend_cap_usd: UsdString.nullable().optional(),
});
const CreateKey = KeyFields.strict();
const PatchKey = KeyFields.partial().strict();
const CreateAccount = z.object({ name: z.string().trim().min(1).max(200) }).strict();
const TopUp = z.object({ amount_usd: UsdString, reference: z.string().trim().min(1).max(200) }).strict();
const Limits = z
  .object({ rpm: z.number().int().positive().nullable(), concurrency: z.number().int().positive().nullable() })
  .strict();
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
    status: state.status,
    revealable: state.revealable,
    created_at: state.createdAt,
    last_used_at: extra.last_used_at ?? null,
    used_usd: extra.used_usd ?? '0.00',
  };
}

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
      // The intake's refusals (a body too large, not JSON, a NUL in an id) keep their own code.
      const refusal = error instanceof AdminError ? error : clientErrorOf(error, request);
      if (refusal) return reply.code(refusal.status).send({ error: { code: refusal.code, message: refusal.message } });
      request.log.error({ err: error }, 'admin request failed');
      return reply.code(500).send({ error: { code: 'internal_error', message: 'internal error' } });
    });

    const settled = async (position: Position | null) => runner.waitFor(position);
    await app.register(knowledgeAdminRoutes(options));
    await app.register(logRoutes(sql, options.now ?? (() => Math.floor(Date.now() / 1000))));

    async function existingAccount(accountId: string) {
      const state = await ledger.wallet(accountId);
      if (state.status === 'none') throw new AdminError(404, 'account_not_found', `account ${accountId} not found`);
      return state;
    }

    function checkModels(models: readonly string[] | null | undefined) {
      const unknown = (models ?? []).filter((m) => !registry.resolve(m));
      if (unknown.length) throw new AdminError(400, 'invalid_request', `allowed_models: unknown model ids: ${unknown.join(', ')}`);
    }

    async function keyExtras(keyIds: string[]) {
      if (keyIds.length === 0) return new Map<string, { last_used_at: number | null; used_usd: string }>();
      const rows = await sql.query<{ key_id: string; last_used_at: string | null; spent: string | null }>(
        `SELECT k.id AS key_id, a.last_used_at::text AS last_used_at, s.spent::text AS spent
           FROM unnest($1::text[]) AS k(id)
           LEFT JOIN key_activity a ON a.key_id = k.id
           LEFT JOIN key_spend s ON s.key_id = k.id`,
        [keyIds],
      );
      return new Map(
        rows.map((r) => [
          r.key_id,
          { last_used_at: r.last_used_at === null ? null : Number(r.last_used_at), used_usd: formatUsd(BigInt(r.spent ?? '0')) },
        ]),
      );
    }

    app.post('/accounts', async (request, reply) => {
      const body = parse(CreateAccount, request.body);
      const result = await ledger.openAccount(body.name);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return reply.code(201).send(accountView(result.accountId, result.state));
    });

    app.get<{ Querystring: { limit?: string; after?: string } }>('/accounts', async (request) => {
      const limit = Math.min(Math.max(Number(request.query.limit ?? 100) || 100, 1), 1000);
      const rows = await sql.query<{ account_id: string }>(
        `SELECT account_id FROM accounts WHERE account_id > $1 ORDER BY account_id LIMIT $2`,
        [request.query.after ?? '', limit + 1],
      );
      const page = rows.slice(0, limit);
      const data = await Promise.all(page.map(async (r) => accountView(r.account_id, await ledger.wallet(r.account_id))));
      return { data, next_cursor: rows.length > limit ? page[page.length - 1]!.account_id : null };
    });

    app.get<{ Params: { id: string } }>('/accounts/:id', async (request) => {
      return accountView(request.params.id, await existingAccount(request.params.id));
    });

    app.post<{ Params: { id: string } }>('/accounts/:id/topups', async (request, reply) => {
      const body = parse(TopUp, request.body);
      const result = await ledger.topUp(request.params.id, parseUsd(body.amount_usd), body.reference);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return reply.code(201).send({ topup_id: result.topupId, amount_usd: formatUsd(parseUsd(body.amount_usd)), account: accountView(request.params.id, result.state) });
    });

    app.put<{ Params: { id: string } }>('/accounts/:id/limits', async (request) => {
      const body = parse(Limits, request.body);
      const result = await ledger.setLimits(request.params.id, body.rpm, body.concurrency);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return accountView(request.params.id, result.state);
    });

    app.post<{ Params: { id: string } }>('/accounts/:id/deactivate', async (request) => {
      const body = parse(Deactivate, request.body ?? undefined);
      const result = await ledger.deactivate(request.params.id, body?.reason ?? 'deactivated by operator');
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return accountView(request.params.id, result.state);
    });

    app.post<{ Params: { id: string } }>('/accounts/:id/reactivate', async (request) => {
      const result = await ledger.reactivate(request.params.id);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return accountView(request.params.id, result.state);
    });

    app.post<{ Params: { id: string } }>('/accounts/:id/keys', async (request, reply) => {
      const body = parse(CreateKey, request.body);
      checkModels(body.allowed_models);
      await existingAccount(request.params.id);
      const result = await ledger.issueKey(request.params.id, {
        name: body.name,
        allowed_models: body.allowed_models ?? null,
        expires_at: body.expires_at ?? null,
        enabled: body.enabled ?? true,
        spend_cap: body.spend_cap_usd == null ? null : parseUsd(body.spend_cap_usd),
      });
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return reply.code(201).send({ ...keyView(result.state), key: result.raw });
    });

    app.get<{ Params: { id: string } }>('/accounts/:id/keys', async (request) => {
      await existingAccount(request.params.id);
      const rows = await sql.query<{ key_id: string }>(
        `SELECT key_id FROM api_keys WHERE account_id = $1 AND status <> 'deleted' ORDER BY created_at, key_id`,
        [request.params.id],
      );
      const extras = await keyExtras(rows.map((r) => r.key_id));
      const data = await Promise.all(rows.map(async (r) => keyView(await ledger.key(r.key_id), extras.get(r.key_id))));
      return { data };
    });

    app.patch<{ Params: { id: string } }>('/keys/:id', async (request) => {
      const body = parse(PatchKey, request.body);
      checkModels(body.allowed_models);
      const result = await ledger.updateKey(request.params.id, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.allowed_models !== undefined ? { allowed_models: body.allowed_models } : {}),
        ...(body.expires_at !== undefined ? { expires_at: body.expires_at } : {}),
        ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
        ...(body.spend_cap_usd !== undefined ? { spend_cap: body.spend_cap_usd === null ? null : parseUsd(body.spend_cap_usd) } : {}),
      });
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      const extras = await keyExtras([request.params.id]);
      return keyView(result.state, extras.get(request.params.id));
    });

    app.post<{ Params: { id: string } }>('/keys/:id/revoke', async (request) => {
      const result = await ledger.revokeKey(request.params.id, 'revoked by operator');
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return keyView(result.state);
    });

    app.delete<{ Params: { id: string } }>('/keys/:id', async (request) => {
      const result = await ledger.deleteKey(request.params.id);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return { id: request.params.id, deleted: true };
    });

    app.get<{ Params: { id: string } }>('/keys/:id/reveal', async (request) => {
      const result = await ledger.revealKey(request.params.id);
      if (!result.ok) throw fromDomain(result.error);
      await settled(result.position);
      return { id: request.params.id, key: result.raw };
    });

    app.get<{ Params: { id: string }; Querystring: { from_revision?: string; limit?: string } }>('/accounts/:id/ledger', async (request) => {
      await existingAccount(request.params.id);
      const limit = Math.min(Math.max(Number(request.query.limit ?? 1000) || 1000, 1), 10_000);
      const from = revisionParam(request.query.from_revision, 'from_revision', 0n);
      const events = await store.readStream(walletStream(request.params.id), { fromRevision: from, maxCount: limit + 1 });
      const page = events.slice(0, limit);
      return {
        account_id: request.params.id,
        data: page.map((e) => ({
          revision: Number(e.revision),
          event_id: e.id,
          type: e.type,
          data: JSON.parse(JSON.stringify(decodeRecorded(e).data, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))),
          created_at: Math.floor(e.createdAt.getTime() / 1000),
        })),
        next_cursor: events.length > limit ? String(page[page.length - 1]!.revision + 1n) : null,
      };
    });
  };
}
