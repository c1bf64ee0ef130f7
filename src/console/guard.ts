import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Ledger } from '../commands/ledger';
import { enterprisesAdministered } from '../projections/enterprises/queries';
import type { Sql } from '../storage/sql';
import { GatewayError } from '../http/errors';
import { html, type Html } from './html';
import { notice, type ConsoleViewer } from './layout';
import { fromOwnOrigin } from './origin';
import { signInPage } from './pages';
import { sameSecret, type ConsoleSessions } from './sessions';

// What stands between a browser and every console page: the security headers, the session (read from the
// log on each request), same-origin and CSRF checks on every form, and the console's own error pages.

export const SESSION_COOKIE = 'gateway_console';
export const INACTIVE = 'Your account is inactive, so its console sessions have ended and its sign-in links open nothing. Ask your operator to reactivate it, then for a new sign-in link.';

/** No inline script or style anywhere; nothing from another origin; never framed. */
const CSP = cspWithFormAction([]);

/** The console's Content-Security-Policy; a form may be sent to (or redirected to) `origins` beside the
 * console's own (the Billing page's top-up form ends on the payment provider's checkout page). */
export function cspWithFormAction(origins: readonly string[]): string {
  return `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action ${['\'self\'', ...origins].join(' ')}; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'`;
}

export class ConsoleRefusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly body: Html,
  ) {
    super(title);
  }
}

/** The session cookie's value as the browser sent it. @fastify/cookie's parser never throws: a value whose
 * percent-encoding is broken is kept as sent, and then opens no session like any other unknown secret. */
export const sessionIdOf = (request: FastifyRequest): string | undefined => request.cookies[SESSION_COOKIE];

export const field = (body: unknown, name: string): string => {
  const value = (body as Record<string, unknown> | null | undefined)?.[name];
  return typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : '';
};

export const notFoundPage = html`${notice('There is no such page in the console.', 'error')}<p><a href="/console/">Go to the overview</a></p>`;

export interface GuardParts {
  readonly sessions: ConsoleSessions;
  readonly ledger: Ledger;
  readonly sql: Sql;
  readonly publicBaseUrl: string | undefined;
  readonly viewers: WeakMap<FastifyRequest, ConsoleViewer>;
  readonly setSession: (request: FastifyRequest, reply: FastifyReply, value: string, maxAge: number) => unknown;
  readonly send: (reply: FastifyReply, status: number, title: string, body: Html, viewer: ConsoleViewer | null, current?: string) => unknown;
}

/** Registers the guard's hooks and handlers on the console's plugin. */
export function guardConsole(app: FastifyInstance, parts: GuardParts): void {
  const { sessions, ledger, sql, viewers, setSession, send } = parts;
  const viewerOf = (request: FastifyRequest) => viewers.get(request)!;
  // On every answer, refusals and not-found pages included (those may end a request before its hooks).
  app.addHook('onSend', (_request, reply, payload, done) => {
    // A page that names its own (the Billing page's: a wider form-action) keeps it.
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', CSP);
    reply
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin');
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    done(null, payload);
  });

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.consolePublic) return;
    const sessionId = sessionIdOf(request);
    const session = sessionId ? await sessions.session(sessionId) : null;
    if (!session) {
      // Ended by a deactivation, and still inactive: say so (once reactivated, it is an ended session like any).
      const endedAccount = sessionId ? await sessions.endedInactive(sessionId) : null;
      const inactive = endedAccount !== null && (await ledger.wallet(endedAccount)).status !== 'active';
      if (sessionId) setSession(request, reply, '', 0);
      if (request.method === 'GET') return reply.redirect(inactive ? '/console/sign-in?inactive=1' : sessionId ? '/console/sign-in?ended=1' : '/console/sign-in', 303);
      if (inactive) throw new ConsoleRefusal(401, 'Account inactive', html`${notice(INACTIVE, 'error')}<p><a href="/console/sign-in">Sign in</a></p>`);
      throw new ConsoleRefusal(401, 'Signed out', html`${notice('Your session has ended. Open a new sign-in link to go on.', 'error')}<p><a href="/console/sign-in">Sign in</a></p>`);
    }
    // Read from the log on every request (not a cache): a deactivation through any instance ends the session at once.
    const wallet = await ledger.wallet(session.accountId);
    if (wallet.status !== 'active') {
      await sessions.endAccountSessions(session.accountId);
      setSession(request, reply, '', 0);
      if (request.method === 'GET') return reply.redirect('/console/sign-in?inactive=1', 303);
      throw new ConsoleRefusal(401, 'Account inactive', html`${notice(INACTIVE, 'error')}<p><a href="/console/sign-in">Sign in</a></p>`);
    }
    const adminOf = await enterprisesAdministered(sql, session.accountId);
    viewers.set(request, { accountId: session.accountId, accountName: wallet.name, csrfToken: session.csrfToken, actor: `console:${session.fingerprint}`, adminOf });
  });

  // Every state-changing request comes from this origin, sign-in included (login CSRF), and all but
  // sign-in carry the session's CSRF token.
  app.addHook('preHandler', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const { origin, referer, host } = request.headers;
    const sameOrigin = fromOwnOrigin({ origin, referer, host, publicBaseUrl: parts.publicBaseUrl });
    if (request.routeOptions.config?.consolePublic) {
      if (!sameOrigin)
        throw new ConsoleRefusal(403, 'Refused', signInPage(notice('This sign-in form was sent from another site, so nobody was signed in. Open your sign-in link yourself, in the address bar.', 'error')));
      return;
    }
    const token = field(request.body, '_csrf');
    if (!sameOrigin || !token || !sameSecret(token, viewerOf(request).csrfToken))
      throw new ConsoleRefusal(403, 'Refused', html`${notice('This form was not sent from a page of your console session (it came from another site, or its security token is missing or wrong), so nothing was changed.', 'error')}<p><a href="/console/">Back to the console</a> and try again from there.</p>`);
  });

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof ConsoleRefusal) return send(reply, error.status, error.title, error.body, viewers.get(request) ?? null);
    // The intake's refusals (a form over its limit, a NUL in the path) and fastify's own, as a page.
    const status = error instanceof GatewayError ? error.status : (error as { statusCode?: number }).statusCode;
    if (status === 404) return send(reply, 404, 'Not found', notFoundPage, viewers.get(request) ?? null);
    if (status !== undefined && status >= 400 && status < 500)
      return send(reply, status, 'Bad request', notice(`The request was refused: ${(error as Error).message}`, 'error'), viewers.get(request) ?? null);
    request.log.error({ err: error }, 'console request failed');
    return send(reply, 500, 'Error', notice(html`Something went wrong on our side (request id <code>${request.id}</code>). Try again; if it goes on, tell your operator that id.`, 'error'), viewers.get(request) ?? null);
  });

  app.setNotFoundHandler((request, reply) => send(reply, 404, 'Not found', notFoundPage, viewers.get(request) ?? null));
}
