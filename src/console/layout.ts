import { html, type Html } from './html';

/** A page of the console's navigation. `visible` decides per session (an enterprise admin's page
 * is listed only for enterprise admins); absent: always listed. */
export interface ConsoleNavItem {
  readonly href: string;
  readonly label: string;
  readonly visible?: (viewer: ConsoleViewer) => boolean;
}

/** Who is looking: what the layout and a page's visibility rule may depend on. */
export interface ConsoleViewer {
  readonly accountId: string;
  readonly accountName: string;
  readonly csrfToken: string;
  /** Who the audit trail says acted: `console:{session fingerprint}` (the `session` of its ConsoleSignedIn). */
  readonly actor: string;
  /** The enterprises (account ids) this account is an admin member of, from the enterprises projection. */
  readonly adminOf: readonly string[];
}

/** The console's pages in navigation order. A new page adds its entry here (with a `visible` rule
 * when only some viewers may open it) and registers its routes beside the others. */
export const CONSOLE_NAV: readonly ConsoleNavItem[] = [
  { href: '/console/', label: 'Overview' },
  { href: '/console/keys', label: 'API keys' },
  { href: '/console/logs', label: 'Call log' },
  { href: '/console/billing', label: 'Billing' },
  { href: '/console/knowledge', label: 'Knowledge' },
  { href: '/console/enterprise', label: 'Enterprise', visible: (viewer) => viewer.adminOf.length > 0 },
  { href: '/console/account', label: 'Account' },
];

export interface PageOptions {
  readonly title: string;
  /** The navigation entry to mark as current. */
  readonly current?: string;
  readonly viewer?: ConsoleViewer | null;
  readonly nav?: readonly ConsoleNavItem[];
}

export function page(options: PageOptions, body: Html): string {
  const { viewer } = options;
  const nav = (options.nav ?? CONSOLE_NAV).filter((item) => viewer && (item.visible?.(viewer) ?? true));
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${options.title} · Gateway console</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<span class="brand">Gateway console</span>
${
  viewer
    ? html`<nav aria-label="Console"><ul>${nav.map(
        (item) => html`<li><a href="${item.href}"${item.href === options.current ? html` aria-current="page"` : ''}>${item.label}</a></li>`,
      )}</ul></nav>
<form method="post" action="/console/sign-out"><input type="hidden" name="_csrf" value="${viewer.csrfToken}"><span class="muted">${viewer.accountName} (${viewer.accountId})</span> <button class="secondary" type="submit">Sign out</button></form>`
    : ''
}
</header>
<main id="main" tabindex="-1">
${body}
</main>
${viewer ? html`<footer class="zone-note muted">Dates and times are in your time zone, <span data-tz>UTC</span> (UTC when scripts are off).</footer>` : ''}
</body>
</html>`.text;
}

/** The hidden field every state-changing form carries. */
export const csrfField = (viewer: ConsoleViewer) => html`<input type="hidden" name="_csrf" value="${viewer.csrfToken}">`;

export function notice(text: string | Html, kind: 'info' | 'error' = 'info'): Html {
  return html`<div class="notice${kind === 'error' ? ' error' : ''}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</div>`;
}
