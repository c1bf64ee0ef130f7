import type { FastifyInstance } from 'fastify';
import type { Ledger } from '../../commands/ledger';
import type { ConsoleSessions } from '../../console/sessions';
import type { Position } from '../../events/store/port';
import type { RouteDoc } from '../openapi/route-doc';
import { AdminError } from './admin-error';
import { baseUrlOf } from '../resources/wiki';

export interface ConsoleLinkOptions {
  readonly ledger: Ledger;
  readonly consoleSessions: ConsoleSessions;
  readonly settled: (position: Position | null) => Promise<void>;
  /** Base of the link; default the address the admin request arrived on. */
  readonly publicBaseUrl?: string | undefined;
}

const LOGIN_LINK_DOC: RouteDoc = {
  operationId: 'createConsoleLoginLink',
  summary: "A one-time sign-in link to the account's web console (15 minutes)",
  tags: ['admin-accounts'],
  responses: { 201: { description: '`{account_id, url, expires_at}`: the code is in the URL\'s fragment, so it never reaches a log.' } },
  errors: { 404: 'No such account: `account_not_found`.', 409: 'The account is inactive: `account_inactive`.' },
};

/** `POST /admin/v1/accounts/:id/login-link`: the operator hands the account holder a sign-in link. */
export function consoleLinkRoutes(options: ConsoleLinkOptions) {
  return async (app: FastifyInstance) => {
    app.post<{ Params: { id: string } }>('/accounts/:id/login-link', { config: { openapi: LOGIN_LINK_DOC } }, async (request, reply) => {
      const wallet = await options.ledger.wallet(request.params.id);
      if (wallet.status === 'none') throw new AdminError(404, 'account_not_found', `account ${request.params.id} not found`);
      if (wallet.status !== 'active') throw new AdminError(409, 'account_inactive', `account ${request.params.id} is inactive; reactivate it first`);
      const link = await options.consoleSessions.issueLink(request.params.id, 'admin');
      await options.settled(link.position);
      const base = baseUrlOf(request, options.publicBaseUrl);
      return reply.code(201).send({ account_id: request.params.id, url: `${base}/console/sign-in#${link.token}`, expires_at: link.expiresAt });
    });
  };
}
