import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Ledger } from '../../commands/ledger';
import type { ModelRegistry } from '../../config/registry';
import { UnreadableEventError } from '../../events/catalog';
import type { EventStore, Position } from '../../events/store/port';
import type { ProjectionRunner } from '../../projections/runner/runner';
import type { Sql } from '../../storage/sql';
import { databaseUnreachable } from '../../storage/outage';
import { storageUnavailable } from '../errors';
import type { IdempotencyStore } from '../../idempotency/store';
import { clientErrorOf } from '../intake/plugin';
import { AdminError } from './admin-error';
import { adminIdempotency } from './idempotency';
import { knowledgeAdminRoutes, type KnowledgeAdminOptions } from './knowledge';
import { logRoutes } from './logs';
import { rerateRoutes } from './rerate';
import { consoleLinkRoutes } from './console-links';
import { signupAdminRoutes } from './signups';
import type { Logins } from '../../accounts/logins';
import type { ConsoleSessions } from '../../console/sessions';
import { enterpriseAdminRoutes } from './enterprise';
import type { Enterprises } from '../../commands/enterprise/service';
import type { KnowledgeQueries } from '../../projections/knowledge/queries';
import { channelAdminRoutes } from './channels';
import type { ChannelHealthAdmin } from '../../channels/admin';
import { accountAdminRoutes } from './accounts';
import { keyAdminRoutes, keyViewById, newKeyReplay as newKeyReplayOf } from './keys';
import { accountLedgerRoutes } from './account-ledger';
import { unreadable } from './fields';
import { paymentAdminRoutes } from './payments';
import type { Payments } from '../../payments/service';

export { MAX_ADMIN_AMOUNT_USD } from './fields';

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
  /** Holders' own sign-ups (`GET /signups`). */
  readonly logins: Logins;
  readonly publicBaseUrl?: string | undefined;
  readonly enterprises: Enterprises;
  readonly knowledgeQueries: KnowledgeQueries;
  /** Paid top-ups (src/payments): `/payments` routes when present. */
  readonly payments?: { readonly payments: Payments };
  /** Channel health (src/channels): `/channels` routes when present. */
  readonly channelHealth?: ChannelHealthAdmin;
}

function tokenMatches(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The operator's API under /admin/v1: the token check, the one error handler, `Idempotency-Key`,
 * and each resource's routes (accounts.ts, keys.ts, account-ledger.ts, enterprise.ts, ...) in the
 * order their OpenAPI operations are listed.
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
    await app.register(signupAdminRoutes(ledger, options.logins));
    if (options.channelHealth) await app.register(channelAdminRoutes(options.channelHealth, sql, runner));

    await app.register(accountAdminRoutes({ ledger, sql, settled, consoleSessions: options.consoleSessions }));
    const newKeyReplay = newKeyReplayOf(ledger);
    await app.register(
      enterpriseAdminRoutes({
        enterprises: options.enterprises,
        runner,
        sql,
        registry,
        knowledgeQueries: options.knowledgeQueries,
        newKeyReplay,
        keyView: async (keyId) => keyViewById(ledger, sql, keyId),
      }),
    );
    await app.register(keyAdminRoutes({ ledger, sql, registry, settled, newKeyReplay }));
    await app.register(accountLedgerRoutes({ ledger, store }));
    if (options.payments) await app.register(paymentAdminRoutes(options.payments.payments, sql));
  };
}
