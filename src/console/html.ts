/** HTML built from tagged templates: every interpolated value is escaped unless it is already Html. */
export class Html {
  constructor(readonly text: string) {}
  toString() {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

type Part = Html | string | number | bigint | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** A moment: UTC in the page, turned into the viewer's time zone by console.js. */
export function when(unixSeconds: number | null): Html {
  if (unixSeconds === null) return html`<span class="muted">never</span>`;
  const iso = new Date(unixSeconds * 1000).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** USD as the spec writes it: the ledger's exact decimal (up to 9 places), at least 2. */
export function usd(amount: string): Html {
  return html`<span class="usd">$${amount}</span>`;
}
