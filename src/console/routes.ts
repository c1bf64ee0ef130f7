import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../commands/ledger';
import { isAdmin } from '../commands/enterprise/enterprise';
import type { Enterprises } from '../commands/enterprise/service';
import { available, escrowLeft } from '../commands/wallet/state';
import { STATUS_OF } from '../http/admin/admin-error';
import type { ModelRegistry } from '../config/registry';
import type { Position } from '../events/store/port';
import { formatUsd } from '../money/usd';
import { CSV_ROW_CAP, DEFAULT_WINDOW_S, dailyUsage, queryLogs, usageTotals, type LogFilter } from '../projections/call-log/queries';
import { auditTail } from '../projections/audit/queries';
import { enterpriseAgents, keyRequests } from '../projections/enterprises/queries';
import { accountKeys, enterpriseAgentKeys } from '../projections/keys/queries';
import { callLedger, credits } from '../projections/ledger/queries';
import type { KnowledgeQueries } from '../projections/knowledge/queries';
import type { Sql } from '../storage/sql';
import { logsCsv } from '../http/admin/logs';
import { CONSOLE_CSS, CONSOLE_JS } from './assets';
import { html, type Html } from './html';
import { notice, page, type ConsoleViewer } from './layout';
import { doc, DateText, FORM_BYTES } from './forms';
import { keyRoutes } from './key-routes';
import { billingRoutes } from './billing-routes';
import type { Payments } from '../payments/service';
import { accountRoutes } from './account-routes';
import type { Logins } from '../accounts/logins';
import type { PasswordSignIn } from '../accounts/password-sign-in';
import type { EmailChanges } from '../accounts/email-change';
import type { SignUps } from '../accounts/sign-up';
import { secretBox } from './keys-page';
import { callPage, enterprisePage, knowledgePage, logsPage, overviewPage, signInPage, type LogFilters } from './pages';
import { receiptOf } from './receipt';
import type { ConsoleSessions } from './sessions';
import { ConsoleRefusal, field, guardConsole, INACTIVE, notFoundPage, sessionIdOf, SESSION_COOKIE } from './guard';
import { SignInLimit } from './sign-in-limit';
import { isTimeZone, offsetAt, startOfDay } from './zone';

export interface ConsoleOptions {
  readonly ledger: Ledger;
  readonly sql: Sql;
  readonly registry: ModelRegistry;
  readonly knowledgeQueries: KnowledgeQueries;
  readonly sessions: ConsoleSessions;
  /** Enterprise admins' page: the same commands as the admin API's approve and reject. */
  readonly enterprises: Enterprises;
  /** Read-your-writes: a page after a key action shows it. */
  readonly settled: (position: Position | null) => Promise<void>;
  readonly now: () => number;
  /** Paid top-ups (the Billing page); absent: the page says top-ups are the operator's. */
  readonly payments?: Payments | undefined;
  /** `https://…`: cookies are marked Secure (as they are for a request that came over TLS). */
  readonly publicBaseUrl?: string | undefined;
  /** A holder's own account: sign-up, password sign-in and reset (src/accounts). */
  readonly signUps: SignUps;
  readonly passwords: PasswordSignIn;
  readonly emailChanges: EmailChanges;
  readonly logins: Logins;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A console route that needs no session (sign-in, the stylesheet and script). */
    readonly consolePublic?: boolean;
  }
}

/** The account holders' console under /console/ (docs/console.md). */
export function consoleRoutes(options: ConsoleOptions) {
  const { ledger, sql, registry, knowledgeQueries, sessions, enterprises, settled, now } = options;
  const limit = new SignInLimit(now);
  const viewers = new WeakMap<FastifyRequest, ConsoleViewer>();
  const viewerOf = (request: FastifyRequest) => viewers.get(request)!;
  const secure = (request: FastifyRequest) =>
    options.publicBaseUrl?.startsWith('https:') === true || request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https';
  const setSession = (request: FastifyRequest, reply: FastifyReply, value: string, maxAge: number) =>
    reply.setCookie(SESSION_COOKIE, value, { path: '/console', httpOnly: true, sameSite: 'lax', maxAge: Math.max(0, Math.floor(maxAge)), secure: secure(request) });

  const send = (reply: FastifyReply, status: number, title: string, body: Html, viewer: ConsoleViewer | null, current?: string) =>
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(page({ title, viewer, ...(current ? { current } : {}) }, body));

  return async (app: FastifyInstance) => {
    // Parses the Cookie header of console requests only (its onRequest hook runs before the session's).
    await app.register(fastifyCookie, { hook: 'onRequest' });
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, text, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(text))));
    });

    guardConsole(app, { sessions, ledger, sql, publicBaseUrl: options.publicBaseUrl, viewers, setSession, send });

    app.get('/assets/console.css', { config: { consolePublic: true, openapi: doc('consoleCss', "The console's stylesheet", 'GET', { responses: { 200: { description: 'CSS.', mediaTypes: ['text/css'] } } }) } }, async (_request, reply) =>
      reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CONSOLE_CSS),
    );
    app.get('/assets/console.js', { config: { consolePublic: true, openapi: doc('consoleJs', "The console's script", 'GET', { responses: { 200: { description: 'JavaScript.', mediaTypes: ['text/javascript'] } } }) } }, async (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(CONSOLE_JS),
    );

    // ---- sign-in and sign-out ----
    app.get<{ Querystring: { ended?: string; inactive?: string } }>('/sign-in', { config: { consolePublic: true, openapi: doc('consoleSignInPage', 'The sign-in page (the link\'s code is in its fragment)', 'GET') } }, async (request, reply) =>
      send(
        reply,
        200,
        'Sign in',
        signInPage(request.query.inactive ? notice(INACTIVE, 'error') : request.query.ended ? notice('Your session has ended. Sign in again to go on.') : null, options.signUps.config.enabled),
        null,
      ),
    );

    app.post('/sign-in', { bodyLimit: FORM_BYTES, config: { consolePublic: true, openapi: doc('consoleSignIn', 'Redeem a sign-in link: starts a session (cookie scoped to /console)', 'POST') } }, async (request, reply) => {
      const admitted = limit.admit(request.ip);
      if (!admitted.ok) {
        reply.header('retry-after', String(admitted.retryAfter));
        return send(reply, 429, 'Too many attempts', signInPage(notice(`Too many sign-in attempts from your address. Wait ${Math.ceil(admitted.retryAfter / 60)} minutes and try again.`, 'error')), null);
      }
      const token = field(request.body, 'token').trim();
      const redeemed = token.length > 0 && token.length <= 200 ? await sessions.redeem(token, request.ip, async (accountId) => (await ledger.wallet(accountId)).status === 'active') : ({ ok: false, reason: 'unknown' } as const);
      if (!redeemed.ok) {
        const why = {
          unknown: 'This sign-in code is not one we issued. Check that you copied the whole link.',
          used: 'This sign-in link was used already: a link works once. Ask your operator for a new one.',
          expired: 'This sign-in link has expired: a link works for 15 minutes. Ask your operator for a new one.',
          inactive: INACTIVE,
        }[redeemed.reason];
        return send(reply, { unknown: 400, used: 410, expired: 410, inactive: 403 }[redeemed.reason], 'Sign in', signInPage(notice(why, 'error')), null);
      }
      setSession(request, reply, redeemed.sessionId, redeemed.session.expiresAt - now());
      return reply.redirect('/console/', 303);
    });

    app.post('/sign-out', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleSignOut', 'End the session', 'POST') } }, async (request, reply) => {
      const sessionId = sessionIdOf(request);
      if (sessionId) await sessions.signOut(sessionId);
      setSession(request, reply, '', 0);
      return send(reply, 200, 'Signed out', html`<h1>Signed out</h1><p>Your session has ended. To come back, open a new sign-in link from your operator.</p>`, null);
    });

    // ---- overview ----
    app.get('/', { prefixTrailingSlash: 'slash', config: { openapi: doc('consoleOverview', 'Overview: balance, holds, spend caps, usage chart, last calls, top-ups', 'GET') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const at = now();
      const to = at + 1;
      const from = to - DEFAULT_WINDOW_S;
      const wallet = await ledger.wallet(viewer.accountId);
      // The chart's days are the viewer's (console.js keeps the zone in a cookie; UTC until then).
      const cookieZone = request.cookies.console_tz ?? '';
      const zone = cookieZone.length <= 64 && isTimeZone(cookieZone) ? cookieZone : 'UTC';
      const offset = offsetAt(at, zone);
      const firstDay = Math.floor((at + offset - 29 * 86400) / 86400);
      const days = Array.from({ length: 30 }, (_, i) => new Date((firstDay + i) * 86400_000).toISOString().slice(0, 10));
      const [keys, credited, daily, totals, lastCalls] = await Promise.all([
        accountKeys(sql, viewer.accountId),
        credits(sql, viewer.accountId),
        dailyUsage(sql, viewer.accountId, firstDay * 86400 - offset, to, offset),
        usageTotals(sql, viewer.accountId, from, to),
        queryLogs(sql, { accountId: viewer.accountId, from, to }, 5),
      ]);
      return send(
        reply,
        200,
        'Overview',
        overviewPage({ balance: wallet.balance, held: wallet.held, keys, credits: credited, days, zone, daily, total: totals.total, byModel: totals.byModel, lastCalls: lastCalls.slice(0, 5) }),
        viewer,
        '/console/',
      );
    });

    app.get('', { prefixTrailingSlash: 'no-slash', config: { consolePublic: true, openapi: doc('consoleRoot', 'The console: redirects to /console/', 'GET', { responses: { 303: { description: 'To `/console/`.', mediaTypes: [] } } }) } }, async (_request, reply) =>
      reply.redirect('/console/', 303),
    );

    // ---- keys ----
    keyRoutes(app, { ledger, sql, registry, settled, now, viewerOf, send });
    billingRoutes(app, { ledger, sql, payments: options.payments, publicBaseUrl: options.publicBaseUrl, viewerOf, send });

    // ---- sign-up, password sign-in and reset, the account page ----
    accountRoutes(app, { signUps: options.signUps, passwords: options.passwords, emailChanges: options.emailChanges, logins: options.logins, sessions, publicBaseUrl: options.publicBaseUrl, now, viewerOf, setSession, send });

    // ---- call log ----
    const LogFilterQuery = z.object({
      from: z.union([z.literal(''), DateText]).default(''),
      to: z.union([z.literal(''), DateText]).default(''),
      model: z.string().max(200).default(''),
      status: z.union([z.literal(''), z.enum(['success', 'error', 'interrupted', 'rejected'])]).default(''),
      key_id: z.string().max(200).default(''),
      request_id: z.string().max(200).default(''),
      task_id: z.string().max(200).default(''),
      // The viewer's time zone (console.js fills it in): from/to are days there. Empty: UTC.
      tz: z.union([z.literal(''), z.string().max(64).refine(isTimeZone, 'is not a time zone')]).default(''),
    });
    // Seconds a JavaScript number holds exactly (the admin API refuses the rest the same way).
    const CURSOR = /^\d{1,15}:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

    function logFilter(accountId: string, query: Record<string, unknown>): { filter: LogFilter; filters: LogFilters; text: string; problem: string | null } {
      const parsed = LogFilterQuery.safeParse(Object.fromEntries(Object.entries(query).filter(([k]) => k in LogFilterQuery.shape).map(([k, v]) => [k, String(v).trim()])));
      const filters: LogFilters = parsed.success ? parsed.data : LogFilterQuery.parse({});
      const problem = parsed.success ? null : `The filter was not applied: ${parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('; ')}.`;
      const zone = filters.tz || 'UTC';
      const to = filters.to ? startOfDay(filters.to, zone) : now() + 1;
      const from = filters.from ? startOfDay(filters.from, zone) : to - DEFAULT_WINDOW_S;
      const cursorText = typeof query.cursor === 'string' && CURSOR.test(query.cursor) ? query.cursor : undefined;
      const filter: LogFilter = {
        accountId,
        from,
        to,
        model: filters.model || undefined,
        status: filters.status || undefined,
        keyId: filters.key_id || undefined,
        requestId: filters.request_id || undefined,
        taskId: filters.task_id || undefined,
        cursor: cursorText ? { createdAt: Number(cursorText.split(':')[0]), id: cursorText.slice(cursorText.indexOf(':') + 1) } : undefined,
      };
      const text = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== '')).toString();
      return { filter, filters, text, problem };
    }

    app.get<{ Querystring: Record<string, unknown> }>('/logs', { config: { openapi: doc('consoleLogs', 'The call log: filters, cursor paging', 'GET') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const { filter, filters, text, problem } = logFilter(viewer.accountId, request.query);
      const pageRows = 50;
      const [rows, keys] = await Promise.all([problem ? Promise.resolve([]) : queryLogs(sql, filter, pageRows), accountKeys(sql, viewer.accountId)]);
      const shown = rows.slice(0, pageRows);
      const last = shown[shown.length - 1];
      const next = rows.length > pageRows && last ? `${last.created_at}:${last.id}` : null;
      return send(reply, 200, 'Call log', logsPage(filters, keys, shown, text, next, problem), viewer, '/console/logs');
    });

    app.get<{ Querystring: Record<string, unknown> }>('/logs.csv', { config: { openapi: doc('consoleLogsCsv', 'The call log as CSV (the admin export\'s columns and cap)', 'GET', { responses: { 200: { description: 'CSV; `x-truncated: true` when the cap cut it.', mediaTypes: ['text/csv'] } } }) } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const { filter, problem } = logFilter(viewer.accountId, request.query);
      if (problem) throw new ConsoleRefusal(400, 'Bad filter', html`${notice(problem, 'error')}<p><a href="/console/logs">Call log</a></p>`);
      const csv = logsCsv(await queryLogs(sql, { ...filter, cursor: undefined }, CSV_ROW_CAP));
      if (csv.truncated) reply.header('x-truncated', 'true');
      return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="calls-${viewer.accountId}.csv"`).send(csv.text);
    });

    app.get<{ Params: { id: string } }>('/logs/:id', { config: { openapi: doc('consoleCall', "A call's detail: its ledger events and price arithmetic", 'GET') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const id = request.params.id;
      const missing = () => new ConsoleRefusal(404, 'Not found', html`${notice('No such call in your account.', 'error')}<p><a href="/console/logs">Call log</a></p>`);
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) throw missing();
      const [row] = await queryLogs(sql, { accountId: viewer.accountId, from: 0, to: Number.MAX_SAFE_INTEGER, id }, 1);
      if (!row) throw missing();
      const ledgerLines = await callLedger(sql, viewer.accountId, id);
      const receipt = receiptOf(registry.resolve(row.model), row, registry.config.discounts ?? []);
      return send(reply, 200, `Call ${row.request_id}`, callPage(row, ledgerLines, receipt), viewer, '/console/logs');
    });

    // ---- knowledge ----
    app.get<{ Querystring: { kb?: string; q?: string } }>('/knowledge', { config: { openapi: doc('consoleKnowledge', 'Knowledge bases: page counts and a search preview', 'GET') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const kbs = await knowledgeQueries.readableKbs(viewer.accountId);
      const counts = await knowledgeQueries.pageCounts(kbs.map((k) => k.kbKey));
      const q = typeof request.query.q === 'string' ? request.query.q.trim().slice(0, 500) : '';
      let search = null;
      if (q) {
        const kb = kbs.find((k) => k.kbId === request.query.kb) ?? kbs[0];
        if (kb) {
          const { total, hits } = await knowledgeQueries.search([kb], q, 10, 0);
          search = { kb: kb.kbId, q, total, hits };
        }
      }
      return send(reply, 200, 'Knowledge', knowledgePage(kbs, counts, search), viewer, '/console/knowledge');
    });

    // ---- enterprise (its admins only; anyone else gets the console's 404, as for a page that is not there) ----
    const notAdmin = () => new ConsoleRefusal(404, 'Not found', notFoundPage);
    /** The enterprise the viewer asks for, when the viewer is its admin (projection and aggregate both say so). */
    const administered = async (viewer: ConsoleViewer, id: string | undefined) => {
      const enterpriseId = id ?? viewer.adminOf[0];
      if (enterpriseId === undefined || !viewer.adminOf.includes(enterpriseId)) throw notAdmin();
      if (!isAdmin(await enterprises.enterprise(enterpriseId), viewer.accountId)) throw notAdmin();
      return enterpriseId;
    };
    const enterpriseView = async (request: FastifyRequest, reply: FastifyReply, enterpriseId: string, status: number, top: Html | null) => {
      const viewer = viewerOf(request);
      const [wallet, names, agents, keys, requests, audit] = await Promise.all([
        ledger.wallet(enterpriseId),
        Promise.all(viewer.adminOf.map(async (id) => ({ id, name: (await ledger.wallet(id)).name }))),
        enterpriseAgents(sql, enterpriseId, 500),
        enterpriseAgentKeys(sql, enterpriseId),
        keyRequests(sql, enterpriseId, 'pending', 500),
        auditTail(sql, enterpriseId, 20),
      ]);
      const withLeft = keys.map((k) => {
        const escrow = wallet.escrows.has(k.keyId);
        const left = escrow ? escrowLeft(wallet, k.keyId) : k.spendCap === null ? null : k.spendCap > k.spent ? k.spendCap - k.spent : 0n;
        return { ...k, escrow, left };
      });
      const data = { enterpriseId, enterprises: names, name: wallet.name, available: available(wallet), agents, keys: withLeft, requests, audit };
      return send(reply, status, `Enterprise ${wallet.name}`, enterprisePage(viewer, data, top), viewer, '/console/enterprise');
    };
    /** A pending request of an enterprise the viewer administers; another's is answered as absent. */
    const requestOf = async (viewer: ConsoleViewer, requestId: string) => {
      const request = /^[A-Za-z0-9_-]{1,100}$/.test(requestId) ? await enterprises.request(requestId) : null;
      if (!request || request.status === 'none' || !viewer.adminOf.includes(request.enterpriseId))
        throw new ConsoleRefusal(404, 'Not found', html`${notice('No such key request in an enterprise you administer.', 'error')}<p><a href="/console/enterprise">Enterprise</a></p>`);
      return request;
    };
    const decisionError = (code: string, message: string, cap: bigint): Html =>
      notice(
        code === 'insufficient_funds'
          ? `Not approved: the enterprise's available balance cannot fund this key's spend cap of ${formatUsd(cap)} USD. Ask your operator to top up the enterprise wallet, then approve again.`
          : code === 'key_request_decided'
            ? `Nothing changed: ${message}.`
            : `Not done (${code}): ${message}.`,
        'error',
      );
    const DECIDED: Record<string, string> = { rejected: 'The key request is rejected.' };

    app.get<{ Querystring: { id?: string; done?: string } }>('/enterprise', { config: { openapi: doc('consoleEnterprise', "An enterprise admin's page: agents, agent keys, pending key requests, the audit trail", 'GET') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const enterpriseId = await administered(viewer, typeof request.query.id === 'string' ? request.query.id : undefined);
      const done = request.query.done && DECIDED[request.query.done] ? notice(DECIDED[request.query.done]!) : null;
      return enterpriseView(request, reply, enterpriseId, 200, done);
    });

    app.post<{ Params: { id: string } }>('/enterprise/requests/:id/approve', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleApproveKeyRequest', "Approve a key request (the admin API's command: escrow, key, audit); the raw key is shown once", 'POST') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const keyRequest = await requestOf(viewer, request.params.id);
      await administered(viewer, keyRequest.enterpriseId);
      const result = await enterprises.approve(keyRequest.requestId, viewer.accountId);
      if (!result.ok) return enterpriseView(request, reply, keyRequest.enterpriseId, STATUS_OF[result.error.code] ?? 400, decisionError(result.error.code, result.error.message, keyRequest.spendCap));
      await settled(result.position);
      return enterpriseView(
        request,
        reply,
        keyRequest.enterpriseId,
        201,
        html`${notice(`Approved: ${formatUsd(keyRequest.spendCap)} USD is now the escrow of ${keyRequest.name}.`)}${secretBox(`The new key for ${keyRequest.requestedBy}: give it to them (it is shown this once)`, result.raw)}`,
      );
    });

    app.post<{ Params: { id: string } }>('/enterprise/requests/:id/reject', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleRejectKeyRequest', "Reject a key request (the admin API's command)", 'POST') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const keyRequest = await requestOf(viewer, request.params.id);
      await administered(viewer, keyRequest.enterpriseId);
      const result = await enterprises.reject(keyRequest.requestId, viewer.accountId, field(request.body, 'reason').trim().slice(0, 500));
      if (!result.ok) return enterpriseView(request, reply, keyRequest.enterpriseId, STATUS_OF[result.error.code] ?? 400, decisionError(result.error.code, result.error.message, keyRequest.spendCap));
      await settled(result.position);
      return reply.redirect(`/console/enterprise?id=${encodeURIComponent(keyRequest.enterpriseId)}&done=rejected`, 303);
    });
  };
}
