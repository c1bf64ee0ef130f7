import { oneAtATime, type Projection } from '../projection';

/** Paid top-ups as the account holder and the operator list them (streams `payment-{session}`), and the
 * webhook deliveries set aside for the operator (stream `payment-webhooks`). Money itself is the wallet's. */
export const paymentsProjection: Projection = {
  name: 'payments',
  streams: ['payment-'],
  tables: ['payments', 'payment_webhooks_set_aside'],
  schema: `
CREATE TABLE IF NOT EXISTS payments (
  session_id text PRIMARY KEY,
  account_id text NOT NULL,
  provider text NOT NULL,
  amount bigint NOT NULL,
  url text NOT NULL,
  paid boolean NOT NULL DEFAULT false,
  payment_intent text,
  refunded bigint NOT NULL DEFAULT 0,
  disputed bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS payments_by_account ON payments (account_id, created_at DESC);
CREATE INDEX IF NOT EXISTS payments_by_time ON payments (created_at DESC, session_id DESC);
CREATE TABLE IF NOT EXISTS payment_webhooks_set_aside (
  event_id text PRIMARY KEY,
  event_type text NOT NULL,
  outcome text NOT NULL,
  object_id text NOT NULL,
  reason text NOT NULL,
  at bigint NOT NULL
);`,

  applyBatch: oneAtATime(async (tx, event) => {
    switch (event.type) {
      case 'CheckoutOpened': {
        const d = event.data;
        await tx.query(
          `INSERT INTO payments (session_id, account_id, provider, amount, url, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
           ON CONFLICT (session_id) DO NOTHING`,
          [d.session_id, d.account_id, d.provider, String(d.amount), d.url, d.at],
        );
        return;
      }
      case 'PaymentPaid':
        await tx.query(`UPDATE payments SET paid = true, payment_intent = $2, amount = $3, updated_at = $4 WHERE session_id = $1`, [
          event.data.session_id,
          event.data.payment_intent,
          String(event.data.amount),
          event.data.at,
        ]);
        return;
      case 'PaymentRefunded':
        await tx.query(`UPDATE payments SET refunded = GREATEST(refunded, $2), updated_at = $3 WHERE session_id = $1`, [event.data.session_id, String(event.data.refunded), event.data.at]);
        return;
      case 'PaymentDisputeLost':
        await tx.query(`UPDATE payments SET disputed = disputed + $2, updated_at = $3 WHERE session_id = $1`, [event.data.session_id, String(event.data.amount), event.data.at]);
        return;
      case 'PaymentWebhookSetAside': {
        const d = event.data;
        await tx.query(
          `INSERT INTO payment_webhooks_set_aside (event_id, event_type, outcome, object_id, reason, at) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (event_id) DO NOTHING`,
          [d.event_id, d.event_type, d.outcome, d.object_id, d.reason, d.at],
        );
        return;
      }
      default:
        return;
    }
  }),
};
