import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Logins } from '../../accounts/logins';
import type { Ledger } from '../../commands/ledger';
import { pageSizeQuery as pageLimit } from '../intake/numbers';
import { AdminError } from './admin-error';
import { adminDoc } from './fields';

/** `GET /admin/v1/signups`: the accounts their holders opened at the console's sign-up (issue 34),
 * newest first, with whether the address is verified and the trial credit granted. Sign-up itself is
 * switched on and off in the config (`signup.enabled`, a reload applies it). */

const CURSOR = /^(\d{1,15}):(acct_[0-9a-f]{1,64})$/;
const SignupsQuery = z.looseObject({
  limit: pageLimit(50, 500),
  after: z.string().regex(CURSOR, 'the `next_cursor` of the previous page').optional().describe('The `next_cursor` of the previous page.'),
});

const LIST_DOC = adminDoc('admin-accounts', 'listSignups', 'List sign-ups (accounts their holders opened), newest first', {
  200: { description: '`{data: [{account_id, email, name, status, created_at, verified_at, trial_granted, signup_ip}], next_cursor}`.' },
}, { query: SignupsQuery });

export function signupAdminRoutes(ledger: Ledger, logins: Logins) {
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: z.output<typeof SignupsQuery> }>('/signups', { config: { openapi: LIST_DOC } }, async (request) => {
      const { limit, after } = request.query;
      const match = after ? CURSOR.exec(after) : null;
      if (after && !match) throw new AdminError(400, 'invalid_request', 'after: not a cursor of this list');
      const rows = await logins.list(limit + 1, match ? { createdAt: Number(match[1]), accountId: match[2]! } : undefined);
      const shown = rows.slice(0, limit);
      const data = await Promise.all(
        shown.map(async (login) => {
          const wallet = await ledger.wallet(login.accountId);
          return {
            account_id: login.accountId,
            email: login.email,
            name: wallet.name,
            status: wallet.status,
            created_at: login.createdAt,
            verified_at: login.verifiedAt,
            trial_granted: wallet.trialGranted,
            signup_ip: login.signupIp,
          };
        }),
      );
      const last = shown[shown.length - 1];
      return { data, next_cursor: rows.length > limit && last ? `${last.createdAt}:${last.accountId}` : null };
    });
  };
}
