/** The admin API's `GET /accounts/:id/ledger`: an account's wallet events, paged by revision and bounded
 * in bytes like the call log's pages. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../../commands/ledger';
import { decodeRecorded, walletStream } from '../../events/catalog';
import type { EventStore } from '../../events/store/port';
import { pageSizeQuery as pageLimit, RevisionQuery } from '../intake/numbers';
import { adminDoc, existingAccount, NO_ACCOUNT } from './fields';
import { LOG_PAGE_BYTES, withinBytes } from './logs';

const LedgerQuery = z.looseObject({
  from_revision: RevisionQuery.describe('The first event (its revision in the wallet stream; default 0).'),
  limit: pageLimit(1000, 10_000),
});

const DOCS = {
  ledger: adminDoc('admin-accounts', 'getAccountLedger', "An account's ledger: the wallet's events", { 200: { description: '`{account_id, data: [{revision, event_id, type, data, created_at}], next_cursor}`.' } }, {
    query: LedgerQuery,
    errors: NO_ACCOUNT,
  }),
};

export function accountLedgerRoutes(options: { readonly ledger: Ledger; readonly store: EventStore }) {
  const { ledger, store } = options;
  return async (app: FastifyInstance) => {
    app.get<{ Params: { id: string }; Querystring: z.output<typeof LedgerQuery> }>('/accounts/:id/ledger', { config: { openapi: DOCS.ledger } }, async (request) => {
      await existingAccount(ledger, request.params.id);
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
