import { formatUsd } from '../money/usd';
import type { DailyUsage, LogRow, UsageTotals } from '../projections/call-log/queries';
import type { AuditRow } from '../projections/audit/queries';
import type { AgentRow, KeyRequestRow } from '../projections/enterprises/queries';
import type { AgentKeyRow, KeyRow } from '../projections/keys/queries';
import type { Credit, LedgerLine } from '../projections/ledger/queries';
import type { ReadableKb, SearchHit } from '../projections/knowledge/queries';
import { holderErrorText } from './call-errors';
import { usageChart } from './chart';
import { html, usd, when, type Html } from './html';
import { csrfField, notice, type ConsoleViewer } from './layout';
import type { Receipt } from './receipt';

const money = (units: bigint) => usd(formatUsd(units));

/** `signUp`: whether the gateway takes sign-ups (the page then offers it). */
export function signInPage(message: Html | null, signUp = false, email = ''): Html {
  return html`<h1>Sign in</h1>
${message}
<h2>With your email address and password</h2>
<form method="post" action="/console/sign-in/password">
<label for="email">Email address</label>
<input type="email" id="email" name="email" autocomplete="username" required maxlength="254" value="${email}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required maxlength="200">
<p><button type="submit" id="password-sign-in">Continue</button> <a href="/console/forgot-password">Forgot your password?</a>${signUp ? html` · No account yet? <a href="/console/sign-up">Sign up</a>` : ''}</p>
</form>
<h2>With a sign-in link</h2>
<p>Open the sign-in link your operator gave you: it fills in the code below. A link works once and for 15 minutes.
No link? Ask the operator to run <code>gateway accounts login-link YOUR_ACCOUNT_ID</code>.</p>
<form method="post" action="/console/sign-in">
<label for="token">Sign-in code (the part of the link after <code>#</code>)</label>
<input type="text" id="token" name="token" autocomplete="off" required spellcheck="false">
<p><button type="submit" id="sign-in">Sign in</button></p>
</form>`;
}

export interface OverviewData {
  readonly balance: bigint;
  readonly held: bigint;
  readonly keys: readonly KeyRow[];
  readonly credits: readonly Credit[];
  readonly days: readonly string[];
  /** the time zone the days are in */
  readonly zone: string;
  readonly daily: readonly DailyUsage[];
  readonly total: UsageTotals;
  readonly byModel: ReadonlyMap<string, UsageTotals>;
  readonly lastCalls: readonly LogRow[];
}

export function overviewPage(d: OverviewData): Html {
  const capped = d.keys.filter((k) => k.spendCap !== null && k.status === 'active');
  return html`<h1>Overview</h1>
<section class="cards" aria-label="Wallet">
<div class="card"><div class="label">Available balance</div><div class="value" id="available">${money(d.balance - d.held)}</div></div>
<div class="card"><div class="label">Held by calls in flight</div><div class="value">${money(d.held)}</div></div>
<div class="card"><div class="label">Balance</div><div class="value">${money(d.balance)}</div></div>
<div class="card"><div class="label">Spent, last 30 days</div><div class="value">${money(d.total.cost)}</div></div>
</section>
<h2>Usage over the last ${d.days.length} days</h2>
${d.total.total_requests === 0 ? notice(html`No calls yet. Create a key on the <a href="/console/keys">API keys</a> page and call a model with it; its cost shows here.`) : usageChart(d.days, d.daily, d.zone)}
${
  d.byModel.size > 0
    ? html`<div class="table-wrap"><table id="by-model"><caption class="muted">Totals by model, last 30 days</caption>
<thead><tr><th scope="col">Model</th><th scope="col" class="num">Cost</th><th scope="col" class="num">Calls</th><th scope="col" class="num">Errors</th><th scope="col" class="num hide-narrow">Input tokens</th><th scope="col" class="num hide-narrow">Output tokens</th></tr></thead>
<tbody>${[...d.byModel.entries()].map(
        ([model, t]) =>
          html`<tr><td class="model">${model}</td><td class="num">${money(t.cost)}</td><td class="num">${t.total_requests}</td><td class="num">${t.error_requests + t.rejected_requests + t.interrupted_requests}</td><td class="num hide-narrow">${t.input_tokens}</td><td class="num hide-narrow">${t.output_tokens}</td></tr>`,
      )}</tbody></table></div>`
    : ''
}
<h2>Spend caps</h2>
${
  capped.length === 0
    ? html`<p class="muted">No key has a spend cap. Set one when you create a key to bound what it may spend.</p>`
    : html`<div class="table-wrap"><table><thead><tr><th scope="col">Key</th><th scope="col" class="num">Spent</th><th scope="col" class="num">Cap</th><th scope="col" class="num">Used</th></tr></thead><tbody>${capped.map(
        (k) =>
          html`<tr><td>${k.name}</td><td class="num">${money(k.spent)}</td><td class="num">${money(k.spendCap!)}</td><td class="num">${k.spendCap === 0n ? '100' : ((Number((k.spent * 10000n) / k.spendCap!) / 100).toFixed(2))}%</td></tr>`,
      )}</tbody></table></div>`
}
<h2>Last calls</h2>
${d.lastCalls.length === 0 ? html`<p class="muted">No calls yet.</p>` : logTable(d.lastCalls)}
<p><a href="/console/logs">The whole call log →</a></p>
<h2>Top-ups and grants</h2>
${
  d.credits.length === 0
    ? html`<p class="muted">No top-ups yet. Your operator tops up the wallet.</p>`
    : html`<div class="table-wrap"><table><thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Reference</th><th scope="col" class="num">Amount</th></tr></thead><tbody>${d.credits.map(
        (c) => html`<tr><td>${when(c.at)}</td><td>${c.type === 'grant' ? 'grant' : 'top-up'}</td><td>${c.reference ?? ''}</td><td class="num">${money(c.amount)}</td></tr>`,
      )}</tbody></table></div>`
}`;
}

export function logTable(rows: readonly LogRow[]): Html {
  return html`<div class="table-wrap"><table id="log"><thead><tr><th scope="col">When</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col" class="hide-narrow">Key</th><th scope="col" class="num hide-narrow">Tokens in / out</th><th scope="col" class="num">Cost</th><th scope="col">Request</th></tr></thead>
<tbody>${rows.map(
    (r) => html`<tr><td>${when(r.created_at)}</td><td>${r.model}</td><td class="status-${r.status}">${r.status}${r.error_code ? html` <span class="muted">(${r.error_code})</span>` : ''}</td>
<td class="hide-narrow">${r.key_name ?? html`<span class="muted">—</span>`}</td><td class="num hide-narrow">${r.input_tokens} / ${r.output_tokens}</td><td class="num">${usd(r.cost_usd)}</td>
<td><a href="/console/logs/${r.id}" aria-label="Details of ${r.request_id}"><code>${r.request_id.slice(0, 16)}…</code></a></td></tr>`,
  )}</tbody></table></div>`;
}

export interface LogFilters {
  readonly from: string;
  readonly to: string;
  readonly model: string;
  readonly status: string;
  readonly key_id: string;
  readonly request_id: string;
  readonly task_id: string;
  /** The time zone the dates are read in (empty: UTC). */
  readonly tz: string;
}

export function logsPage(filters: LogFilters, keys: readonly KeyRow[], rows: readonly LogRow[], query: string, next: string | null, problem: string | null): Html {
  const option = (value: string, label: string, current: string) => html`<option value="${value}"${value === current ? html` selected` : ''}>${label}</option>`;
  return html`<h1>Call log</h1>
<form method="get" action="/console/logs" class="grid" aria-label="Filters">
<input type="hidden" id="f-tz" name="tz" value="${filters.tz}" data-zone>
<div><label for="f-from">From (date, <span data-tz>${filters.tz || 'UTC'}</span>)</label><input type="text" id="f-from" name="from" value="${filters.from}" placeholder="YYYY-MM-DD"></div>
<div><label for="f-to">To (date, <span data-tz>${filters.tz || 'UTC'}</span>, exclusive)</label><input type="text" id="f-to" name="to" value="${filters.to}" placeholder="YYYY-MM-DD"></div>
<div><label for="f-model">Model</label><input type="text" id="f-model" name="model" value="${filters.model}"></div>
<div><label for="f-status">Status</label><select id="f-status" name="status">${option('', 'any', filters.status)}${['success', 'error', 'interrupted', 'rejected'].map((s) => option(s, s, filters.status))}</select></div>
<div><label for="f-key">Key</label><select id="f-key" name="key_id">${option('', 'any', filters.key_id)}${keys.map((k) => option(k.keyId, `${k.name} (${k.prefix}…)`, filters.key_id))}</select></div>
<div><label for="f-request">Request id (x-gateway-trace)</label><input type="text" id="f-request" name="request_id" value="${filters.request_id}"></div>
<div><label for="f-task">Task id</label><input type="text" id="f-task" name="task_id" value="${filters.task_id}"></div>
<div class="actions"><button type="submit">Filter</button> <a href="/console/logs">Clear</a></div>
</form>
${problem ? notice(problem, 'error') : ''}
<p><a href="/console/logs.csv${query ? `?${query}` : ''}" id="csv" download>Download these calls as CSV</a> <span class="muted">(10,000 rows at most)</span></p>
${
  rows.length === 0
    ? notice(problem ? 'Fix the filter above and try again.' : 'No calls match. Widen the time window (the default is the last 30 days) or clear the filters.')
    : logTable(rows)
}
${next ? html`<p><a href="/console/logs?${query ? `${query}&` : ''}cursor=${encodeURIComponent(next)}" rel="next">Older calls →</a></p>` : ''}`;
}

/** The prompt-cache writes of a call, by lifetime, for its token line ('' when none). */
function cacheWrites(row: LogRow): string {
  if (row.cache_write_tokens === 0) return '';
  const oneHour = Math.min(row.cache_write_1h_tokens, row.cache_write_tokens);
  return `, ${row.cache_write_tokens} written to the cache: ${row.cache_write_tokens - oneHour} for 5 minutes, ${oneHour} for 1 hour`;
}

export function callPage(row: LogRow, ledger: readonly LedgerLine[], receipt: Receipt): Html {
  const fact = (label: string, value: Html | string | number | null) => html`<dt>${label}</dt><dd>${value ?? html`<span class="muted">—</span>`}</dd>`;
  return html`<h1>Call ${row.request_id}</h1>
<p><a href="/console/logs">← Call log</a></p>
<dl class="facts" id="call">
${fact('When', when(row.created_at))}
${fact('Model', row.model)}
${fact('Status', html`<span class="status-${row.status}">${row.status}</span>`)}
${row.error_code ? fact('What happened', html`${holderErrorText(row.error_code, row.error_message)} <span class="muted">(<code>${row.error_code}</code>)</span>`) : ''}
${fact('Key', row.key_name ? `${row.key_name} (${row.key_prefix}…)` : null)}
${fact('Request id', html`<code>${row.request_id}</code>`)}
${row.task_id ? fact('Task id', html`<code>${row.task_id}</code>`) : ''}
${fact('Tokens', `${row.input_tokens} in (${row.cached_tokens} cached${cacheWrites(row)}), ${row.output_tokens} out`)}
${row.unit_count !== null ? fact('Units', `${row.unit_count} ${row.unit_type ?? ''}`) : ''}
${fact('Latency', `${row.latency_ms} ms`)}
${fact('Attempts', row.attempts_count)}
${fact('Cost', usd(row.cost_usd))}
${row.adjustment_usd !== '0.00' ? fact('Re-rated by', html`${usd(row.adjustment_usd)} (${row.adjustment_reference ?? ''})`) : ''}
</dl>
<h2>Why was I charged</h2>
<div class="table-wrap"><table id="receipt"><thead><tr><th scope="col">What</th><th scope="col" class="num">Quantity</th><th scope="col" class="num">Price</th><th scope="col" class="num">Amount</th></tr></thead>
<tbody>${receipt.lines.map((l) => html`<tr><td>${l.label}</td><td class="num">${l.quantity}</td><td class="num">${l.price}</td><td class="num">${l.amount}</td></tr>`)}
${receipt.multipliers.map((m) => html`<tr><td colspan="3">× ${m}</td><td></td></tr>`)}
<tr><th scope="row" colspan="3">Rounded up to the nano-dollar</th><td class="num">${usd(receipt.computed)}</td></tr>
<tr><th scope="row" colspan="3">Charged (ledger)</th><td class="num" id="charged">${usd(receipt.charged)}</td></tr></tbody></table></div>
${receipt.note ? html`<p class="muted">${receipt.note}</p>` : ''}
<h2>Ledger events</h2>
${
  ledger.length === 0
    ? html`<p class="muted">None: this call held no money (it was refused before it ran).</p>`
    : html`<div class="table-wrap"><table id="ledger"><thead><tr><th scope="col">#</th><th scope="col">When</th><th scope="col">Event</th><th scope="col" class="num">Amount</th><th scope="col" class="num">Balance after</th><th scope="col" class="num">Held after</th></tr></thead><tbody>${ledger.map(
        (e) =>
          html`<tr><td>${e.seq}</td><td>${when(e.at)}</td><td>${e.type === 'hold' ? 'hold' : e.type === 'capture' ? 'settlement (capture)' : e.type === 'release' ? 'release' : e.type}${e.reference && e.type !== 'hold' ? html` <span class="muted">${e.reference}</span>` : ''}</td><td class="num">${money(e.amount)}</td><td class="num">${money(e.balanceAfter)}</td><td class="num">${money(e.heldAfter)}</td></tr>`,
      )}</tbody></table></div>`
}`;
}

/** The search's snippet marks its matches with `**` (the REST and MCP answers are Markdown): here, <mark>. */
const highlighted = (snippet: string): Html => html`${snippet.split('**').map((part, i) => (i % 2 === 1 ? html`<mark>${part}</mark>` : part))}`;

export function knowledgePage(kbs: readonly ReadableKb[], counts: ReadonlyMap<string, number>, search: { kb: string; q: string; total: number; hits: readonly SearchHit[] } | null): Html {
  return html`<h1>Knowledge bases</h1>
${
  kbs.length === 0
    ? notice('No knowledge bases yet. Your operator imports pages into them (gateway kb import); they then appear here and to your keys through /api/v1/ext/wiki and MCP.')
    : html`<div class="table-wrap"><table id="kbs"><thead><tr><th scope="col">Base</th><th scope="col">Title</th><th scope="col">Access</th><th scope="col" class="num">Pages</th></tr></thead><tbody>${kbs.map(
        (k) => html`<tr><td><code>${k.kbId}</code></td><td>${k.title}</td><td>${k.access}</td><td class="num">${counts.get(k.kbKey) ?? 0}</td></tr>`,
      )}</tbody></table></div>
<h2>Search preview</h2>
<form method="get" action="/console/knowledge" class="grid">
<div><label for="kb">Base</label><select id="kb" name="kb">${kbs.map((k) => html`<option value="${k.kbId}"${k.kbId === search?.kb ? html` selected` : ''}>${k.title} (${k.kbId})</option>`)}</select></div>
<div><label for="q">Search text</label><input type="search" id="q" name="q" value="${search?.q ?? ''}" required></div>
<div><button type="submit">Search</button></div>
</form>
${
  search
    ? search.hits.length === 0
      ? html`<p class="muted">No page matches “${search.q}”. Try fewer or other words.</p>`
      : html`<p>${search.total} page(s) match.</p><ol>${search.hits.map((h) => html`<li><strong>${h.title}</strong> <code>${h.id}</code><br><span class="muted">${highlighted(h.snippet)}</span></li>`)}</ol>`
    : ''
}`
}`;
}

export interface EnterpriseData {
  /** The enterprise shown, and every enterprise the viewer administers (a switch when several). */
  readonly enterpriseId: string;
  readonly enterprises: readonly { readonly id: string; readonly name: string }[];
  readonly name: string;
  readonly available: bigint;
  readonly agents: readonly AgentRow[];
  /** Each key with what it may still spend: an escrow key's escrow left, a capped key's cap left, null without a cap. */
  readonly keys: readonly (AgentKeyRow & { readonly escrow: boolean; readonly left: bigint | null })[];
  readonly requests: readonly KeyRequestRow[];
  readonly audit: readonly AuditRow[];
}

export function enterprisePage(viewer: ConsoleViewer, d: EnterpriseData, top: Html | null): Html {
  const agentName = new Map(d.agents.map((a) => [a.agentId, a.name]));
  const agentLabel = (id: string) => html`${agentName.get(id) ?? id} <span class="muted hide-narrow"><code>${id}</code></span>`;
  const here = `/console/enterprise?id=${encodeURIComponent(d.enterpriseId)}`;
  return html`<h1>Enterprise ${d.name}</h1>
${
  d.enterprises.length > 1
    ? html`<nav aria-label="Your enterprises"><p>You administer: ${d.enterprises.map(
        (e, i) => html`${i > 0 ? ', ' : ''}<a href="/console/enterprise?id=${encodeURIComponent(e.id)}"${e.id === d.enterpriseId ? html` aria-current="page"` : ''}>${e.name}</a>`,
      )}</p></nav>`
    : ''
}
${top}
<section class="cards" aria-label="Enterprise wallet">
<div class="card"><div class="label">Available to fund escrows</div><div class="value" id="enterprise-available">${money(d.available)}</div></div>
<div class="card"><div class="label">Pending key requests</div><div class="value">${d.requests.length}</div></div>
</section>
<h2>Pending key requests</h2>
${
  d.requests.length === 0
    ? html`<p class="muted">No key request waits for a decision. Members request agent keys through your operator (<code>gateway agents request-key</code>).</p>`
    : html`<div class="table-wrap"><table id="requests"><thead><tr><th scope="col">Requested</th><th scope="col">Key name</th><th scope="col">Agent</th><th scope="col">By</th><th scope="col" class="num">Spend cap (escrow)</th><th scope="col">Decision</th></tr></thead><tbody>${d.requests.map(
        (r) => html`<tr data-request="${r.requestId}"><td>${when(r.createdAt)}</td><td>${r.name}</td><td>${agentLabel(r.agentId)}</td><td><code>${r.requestedBy}</code></td><td class="num">${money(r.spendCap)}</td>
<td><div class="actions"><form method="post" action="/console/enterprise/requests/${r.requestId}/approve" class="inline" data-confirm="Approve ${r.name}? ${formatUsd(r.spendCap)} USD moves from the enterprise's available balance into the key's escrow.">${csrfField(viewer)}<button type="submit">Approve</button></form>
<form method="post" action="/console/enterprise/requests/${r.requestId}/reject" class="inline">${csrfField(viewer)}<label for="reason-${r.requestId}" class="visually-hidden">Reason for rejecting ${r.name} (optional)</label><input type="text" id="reason-${r.requestId}" name="reason" maxlength="500" placeholder="reason (optional)"> <button type="submit" class="danger">Reject</button></form></div></td></tr>`,
      )}</tbody></table></div>`
}
<h2>Agents</h2>
${
  d.agents.length === 0
    ? html`<p class="muted">No agents yet. Your operator creates them (<code>gateway agents create</code>).</p>`
    : html`<div class="table-wrap"><table id="agents"><thead><tr><th scope="col">Name</th><th scope="col">Model</th><th scope="col">Published</th><th scope="col" class="hide-narrow">Knowledge bases</th></tr></thead><tbody>${d.agents.map(
        (a) => html`<tr><td>${a.name} <span class="muted hide-narrow"><code>${a.agentId}</code></span></td><td>${a.model ?? html`<span class="muted">enterprise default</span>`}</td>
<td>${a.deleted ? html`<span class="bad">deleted</span>` : a.published ? html`<span class="ok">yes</span>` : html`<span class="bad">no</span>`}</td>
<td class="hide-narrow">${a.kbIds.length === 0 ? html`<span class="muted">none</span>` : a.kbIds.join(', ')}</td></tr>`,
      )}</tbody></table></div>`
}
<h2>Agent keys</h2>
${
  d.keys.length === 0
    ? html`<p class="muted">No agent keys yet. Approving a request above issues one.</p>`
    : html`<div class="table-wrap"><table id="agent-keys"><thead><tr><th scope="col">Name</th><th scope="col" class="hide-narrow">Key</th><th scope="col">Agent</th><th scope="col">State</th><th scope="col" class="num">Spent</th><th scope="col" class="num">Left</th></tr></thead><tbody>${d.keys.map(
        (k) => html`<tr data-key="${k.keyId}"><td>${k.name}</td><td class="hide-narrow"><code>${k.prefix}…</code></td><td>${agentLabel(k.agentId)}</td>
<td>${k.status === 'revoked' ? html`<span class="bad">revoked</span>` : !k.enabled ? html`<span class="bad">disabled</span>` : html`<span class="ok">active</span>`}</td>
<td class="num">${money(k.spent)}</td>
<td class="num">${k.left === null ? html`<span class="muted">no cap</span>` : html`${money(k.left)} <span class="muted">of ${money(k.spendCap ?? 0n)}${k.escrow ? ' escrow' : ' cap'}</span>`}</td></tr>`,
      )}</tbody></table></div>`
}
<h2>Audit trail</h2>
${
  d.audit.length === 0
    ? html`<p class="muted">Nothing recorded yet.</p>`
    : html`<div class="table-wrap"><table id="audit"><caption class="muted">The last ${d.audit.length} entries, newest first</caption><thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col" class="hide-narrow">Subject</th><th scope="col">By</th></tr></thead><tbody>${d.audit.map(
        (a) => html`<tr><td>${when(a.at)}</td><td>${a.action}</td><td class="hide-narrow">${a.subjectType} <code>${a.subjectId}</code></td><td><code>${a.actor ?? 'admin'}</code></td></tr>`,
      )}</tbody></table></div>`
}
<p><a href="${here}">Refresh</a></p>`;
}
