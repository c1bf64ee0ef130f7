import { formatUsd } from '../money/usd';
import type { KeyRow } from '../projections/keys/queries';
import { html, usd, when, type Html } from './html';
import { csrfField, type ConsoleViewer } from './layout';

/** The API keys page: the create form, the list with its actions, the raw key shown once, reveal. */

const money = (units: bigint) => usd(formatUsd(units));

function keyState(k: KeyRow, now: number): Html {
  if (k.status === 'revoked') return html`<span class="bad">revoked</span>`;
  if (!k.enabled) return html`<span class="bad">disabled</span>`;
  if (k.expiresAt !== null && k.expiresAt <= now) return html`<span class="bad">expired</span>`;
  return html`<span class="ok">active</span>`;
}

export function secretBox(label: string, raw: string): Html {
  return html`<section class="notice" aria-labelledby="secret-label">
<p id="secret-label"><strong>${label}</strong></p>
<div class="secret"><code id="raw-key">${raw}</code><button type="button" class="secondary" data-copy="raw-key" hidden>Copy</button></div>
<p class="muted">Store it now, in a password manager or your app's secrets. This page is not kept: reloading it will not show the key again.</p>
</section>`;
}

/** What the holder typed in the create-key form, and what is wrong with which field (after a refusal). */
export interface KeyForm {
  readonly values: Readonly<Record<string, string>>;
  readonly errors: Readonly<Record<string, string>>;
}

export function keysPage(viewer: ConsoleViewer, keys: readonly KeyRow[], now: number, top: Html | null, models: readonly string[], form?: KeyForm): Html {
  // A field keeps what was typed; a wrong one says why next to it (and to screen readers).
  const input = (name: string, id: string, label: string | Html, tag: Html) => {
    const error = form?.errors[name];
    return html`<div><label for="${id}">${label}</label>${tag} value="${form?.values[name] ?? ''}"${error ? html` aria-invalid="true" aria-describedby="${id}-error"` : ''}>${error ? html`<p class="field-error" id="${id}-error">${error}</p>` : ''}</div>`;
  };
  return html`<h1>API keys</h1>
${top}
<h2>Create a key</h2>
<form method="post" action="/console/keys" class="grid" novalidate>
${csrfField(viewer)}
<input type="hidden" name="tz" value="${form?.values.tz ?? ''}" data-zone>
${input('name', 'key-name', 'Name', html`<input type="text" id="key-name" name="name" required maxlength="200" placeholder="laptop"`)}
${input('allowed_models', 'key-models', 'Allowed models (comma-separated; empty: all)', html`<input type="text" id="key-models" name="allowed_models" list="model-ids" placeholder="gpt-4o-mini"`)}
${input('expires_at', 'key-expires', html`Expires on (from the start of this day in your time zone, <span data-tz>${form?.values.tz || 'UTC'}</span>; empty: never)`, html`<input type="date" id="key-expires" name="expires_at"`)}
${input('spend_cap_usd', 'key-cap', 'Spend cap in USD (empty: none)', html`<input type="text" id="key-cap" name="spend_cap_usd" inputmode="decimal" placeholder="10.00"`)}
<div><button type="submit">Create key</button></div>
</form>
<datalist id="model-ids">${models.map((m) => html`<option value="${m}">`)}</datalist>
<h2>Your keys</h2>
${
  keys.length === 0
    ? html`<p class="muted">No keys yet: create one above, then send it as <code>Authorization: Bearer …</code>.</p>`
    : html`<div class="table-wrap"><table id="keys"><thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">State</th><th scope="col" class="hide-narrow">Models</th><th scope="col" class="hide-narrow">Expires</th><th scope="col" class="num">Spent / cap</th><th scope="col" class="hide-narrow">Last used</th><th scope="col">Actions</th></tr></thead><tbody>${keys.map(
        (k) => html`<tr data-key="${k.keyId}"><td>${k.name}</td><td><code>${k.prefix}…</code></td><td>${keyState(k, now)}</td>
<td class="hide-narrow">${k.allowedModels === null ? html`<span class="muted">all</span>` : k.allowedModels.join(', ')}</td>
<td class="hide-narrow">${k.expiresAt === null ? html`<span class="muted">never</span>` : when(k.expiresAt)}</td>
<td class="num">${money(k.spent)}${k.spendCap !== null ? html` / ${money(k.spendCap)}` : ''}</td>
<td class="hide-narrow">${when(k.lastUsedAt)}</td>
<td><div class="actions">${
          k.status === 'revoked'
            ? ''
            : html`${k.revealable ? html`<a href="/console/keys/${k.keyId}/reveal">Reveal</a>` : ''}
<form method="post" action="/console/keys/${k.keyId}/${k.enabled ? 'disable' : 'enable'}" class="inline">${csrfField(viewer)}<button type="submit" class="secondary">${k.enabled ? 'Disable' : 'Enable'}</button></form>
<form method="post" action="/console/keys/${k.keyId}/revoke" class="inline" data-confirm="Revoke ${k.name}? Calls with it will be refused at once; this cannot be undone.">${csrfField(viewer)}<button type="submit" class="danger">Revoke</button></form>`
        }
<form method="post" action="/console/keys/${k.keyId}/delete" class="inline" data-confirm="Delete ${k.name}? It disappears from this list and can never be revealed again.">${csrfField(viewer)}<button type="submit" class="danger">Delete</button></form></div></td></tr>`,
      )}</tbody></table></div>`
}`;
}

export function revealConfirmPage(viewer: ConsoleViewer, key: KeyRow): Html {
  return html`<h1>Reveal ${key.name}</h1>
<p>The raw key gives whoever sees it the use of your wallet. Revealing it is recorded in your account's audit trail.</p>
<form method="post" action="/console/keys/${key.keyId}/reveal">${csrfField(viewer)}
<div class="actions"><button type="submit">Reveal the key</button> <a href="/console/keys">Cancel</a></div></form>`;
}

