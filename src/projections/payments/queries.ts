import { paymentStatus } from '../../commands/payment/decider';
import type { SqlQuery } from '../../storage/sql';

/** The read side of `payments` and `payment_webhooks_set_aside`: the holder's payment history (the
 * billing API, the console), the operator's list and the deliveries set aside (admin API, CLI). */

export interface PaymentRow {
  readonly sessionId: string;
  readonly accountId: string;
  readonly provider: string;
  readonly amount: bigint;
  readonly url: string;
  readonly status: ReturnType<typeof paymentStatus>;
  readonly paymentIntent: string | null;
  readonly refunded: bigint;
  readonly disputed: bigint;
  readonly createdAt: number;
  readonly updatedAt: number;
}

type Raw = Record<'session_id' | 'account_id' | 'provider' | 'amount' | 'url' | 'refunded' | 'disputed' | 'created_at' | 'updated_at', string> & {
  paid: boolean;
  payment_intent: string | null;
};

const COLUMNS = `session_id, account_id, provider, amount::text AS amount, url, paid, payment_intent, refunded::text AS refunded,
                 disputed::text AS disputed, created_at::text AS created_at, updated_at::text AS updated_at`;

function rowOf(r: Raw): PaymentRow {
  const amount = BigInt(r.amount);
  const refunded = BigInt(r.refunded);
  const disputed = BigInt(r.disputed);
  return {
    sessionId: r.session_id,
    accountId: r.account_id,
    provider: r.provider,
    amount,
    url: r.url,
    status: paymentStatus({ status: r.paid ? 'paid' : 'open', amount, refunded, disputed }),
    paymentIntent: r.payment_intent,
    refunded,
    disputed,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** Payments newest first: one account's, or every account's (null); `before` is a cursor (created_at, session id). */
export async function payments(sql: SqlQuery, accountId: string | null, limit: number, before: { createdAt: number; sessionId: string } | null = null): Promise<PaymentRow[]> {
  const rows = await sql.query<Raw>(
    `SELECT ${COLUMNS} FROM payments
      WHERE ($1::text IS NULL OR account_id = $1)
        AND ($3::bigint IS NULL OR (created_at, session_id) < ($3::bigint, $4::text))
      ORDER BY created_at DESC, session_id DESC LIMIT $2`,
    [accountId, limit, before?.createdAt ?? null, before?.sessionId ?? null],
  );
  return rows.map(rowOf);
}

export async function paymentById(sql: SqlQuery, sessionId: string): Promise<PaymentRow | null> {
  const [row] = await sql.query<Raw>(`SELECT ${COLUMNS} FROM payments WHERE session_id = $1`, [sessionId]);
  return row ? rowOf(row) : null;
}

export interface SetAsideDelivery {
  readonly eventId: string;
  readonly eventType: string;
  readonly outcome: 'unmatched' | 'failed';
  readonly objectId: string;
  readonly reason: string;
  readonly at: number;
}

/** Webhook deliveries the gateway did not apply, newest first. */
export async function setAsideDeliveries(sql: SqlQuery, limit: number): Promise<SetAsideDelivery[]> {
  const rows = await sql.query<{ event_id: string; event_type: string; outcome: string; object_id: string; reason: string; at: string }>(
    `SELECT event_id, event_type, outcome, object_id, reason, at::text AS at FROM payment_webhooks_set_aside ORDER BY at DESC, event_id DESC LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ eventId: r.event_id, eventType: r.event_type, outcome: r.outcome as SetAsideDelivery['outcome'], objectId: r.object_id, reason: r.reason, at: Number(r.at) }));
}

/** How many deliveries were set aside, by outcome (the `/metrics` gauge). */
export async function setAsideCounts(sql: SqlQuery): Promise<{ unmatched: number; failed: number }> {
  const rows = await sql.query<{ outcome: string; n: string }>(`SELECT outcome, count(*)::text AS n FROM payment_webhooks_set_aside GROUP BY outcome`);
  const of = (o: string) => Number(rows.find((r) => r.outcome === o)?.n ?? 0);
  return { unmatched: of('unmatched'), failed: of('failed') };
}
