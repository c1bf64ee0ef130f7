/** The admin API's accounts: open, list, read, top up, limits, channel group, deactivate and
 * reactivate (registered by `routes.ts` under `/admin/v1`, behind its token check). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../../commands/ledger';
import { MINIMUM_TOPUP } from '../../commands/wallet/decider';
import { available, type WalletState } from '../../commands/wallet/state';
import { UnreadableEventError } from '../../events/catalog';
import { ChannelGroup, INT32_MAX } from '../../events/catalog/codec';
import { formatUsd, parseUsd } from '../../money/usd';
import { accountIdPage } from '../../projections/accounts/queries';
import type { Sql } from '../../storage/sql';
import type { ConsoleSessions } from '../../console/sessions';
import { pageSizeQuery as pageLimit } from '../intake/numbers';
import { fromDomain, parse } from './admin-error';
import { operatorText } from './operator-text';
import { AdminAmount, adminDoc, existingAccount, MAX_ADMIN_AMOUNT_USD, NAME_MAX, NO_ACCOUNT, unreadable, type Settled } from './fields';

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

const AccountsQuery = z.looseObject({ limit: pageLimit(100, 1000), after: z.string().optional().describe('The `next_cursor` of the previous page.') });

const ACCOUNT = 'The account: `{id, name, status, balance_usd, held_usd, available_usd, limits, group, created_at}`.';

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
};

export interface AccountAdminOptions {
  readonly ledger: Ledger;
  readonly sql: Sql;
  readonly settled: Settled;
  readonly consoleSessions: ConsoleSessions;
}

export function accountAdminRoutes(options: AccountAdminOptions) {
  const { ledger, sql, settled } = options;
  return async (app: FastifyInstance) => {
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
      return accountView(request.params.id, await existingAccount(ledger, request.params.id));
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
  };
}
