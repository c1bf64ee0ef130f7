import { MINIMUM_TOPUP } from '../commands/wallet/decider';
import { formatUsd } from '../money/usd';
import type { PaymentRow } from '../projections/payments/queries';
import { html, usd, when, type Html } from './html';
import { csrfField, type ConsoleViewer } from './layout';

/** The Billing page: the balance, the top-up form (the spec's 134.8 minimum; it leads to the payment
 * provider's checkout page), and the payment history. Without a provider, top-ups are the operator's. */

const money = (units: bigint) => usd(formatUsd(units));

const STATUS: Record<PaymentRow['status'], Html> = {
  open: html`<span class="muted">not paid</span>`,
  paid: html`<span class="ok">paid</span>`,
  partially_refunded: html`<span class="bad">partly refunded</span>`,
  refunded: html`<span class="bad">refunded</span>`,
  disputed: html`<span class="bad">disputed</span>`,
};

export interface BillingView {
  readonly balance: bigint;
  readonly available: bigint;
  /** The provider's label (`Stripe`), or null: top-ups are handled by the operator. */
  readonly provider: string | null;
  readonly payments: readonly PaymentRow[];
  /** What the holder typed, and what is wrong with it (after a refusal). */
  readonly amount?: string;
  readonly error?: string;
}

export function billingPage(viewer: ConsoleViewer, view: BillingView, top: Html | null): Html {
  const minimum = formatUsd(MINIMUM_TOPUP);
  const form = view.provider
    ? html`<h2>Top up</h2>
<form method="post" action="/console/billing/checkout" class="grid" novalidate>
${csrfField(viewer)}
<div><label for="topup-amount">Amount in USD (at least ${minimum})</label><input type="text" id="topup-amount" name="amount_usd" inputmode="decimal" required value="${view.amount ?? '150.00'}"${view.error ? html` aria-invalid="true" aria-describedby="topup-error"` : ''}>${view.error ? html`<p class="field-error" id="topup-error">${view.error}</p>` : ''}</div>
<div><button type="submit">Pay with ${view.provider}</button></div>
</form>
<p class="muted">You pay on ${view.provider}'s page; your balance is credited as soon as ${view.provider} confirms the payment.</p>`
    : html`<h2>Top up</h2>
<p class="notice" role="status">Top-ups are handled by the operator: ask them to top up your account (at least ${minimum} USD).</p>`;
  const rows = view.payments.map(
    (p) => html`<tr><td>${when(p.createdAt)}</td><td class="num">${money(p.amount)}</td><td>${STATUS[p.status]}</td><td class="num">${p.refunded + p.disputed > 0n ? money(p.refunded + p.disputed) : ''}</td><td><code>${p.sessionId}</code></td></tr>`,
  );
  return html`<h1>Billing</h1>
${top}
<section class="cards" aria-label="Wallet">
<div class="card"><div class="label">Balance</div><div class="value" id="balance">${money(view.balance)}</div></div>
<div class="card"><div class="label">Available</div><div class="value">${money(view.available)}</div></div>
</section>
${form}
<h2>Payments</h2>
${
  view.payments.length === 0
    ? html`<p class="muted">No payments yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Date</th><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col" class="num">Returned</th><th scope="col">Payment</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`
}`;
}
