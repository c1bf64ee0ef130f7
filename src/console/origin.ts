/**
 * Whether a console form came from one of the console's own pages, by the headers a browser sets
 * itself (a page cannot forge them). A browser sends `Origin` with every cross-origin POST (`null`
 * from an opaque origin, which is refused); without it, a `Referer` is the next witness. A request
 * with neither is no browser's form submission (curl, a script): it is let through, and every form but
 * sign-in still needs the session's CSRF token. Sign-in has no session yet, so this check is all that
 * stops another site from signing a visitor into the attacker's account (login CSRF).
 */
export interface FormHeaders {
  readonly origin?: string | undefined;
  readonly referer?: string | undefined;
  /** The Host the request was sent to: the console's own origin is on it. */
  readonly host?: string | undefined;
  /** PUBLIC_BASE_URL: behind a proxy that rewrites Host, the origin browsers know the console by. */
  readonly publicBaseUrl?: string | undefined;
}

export function fromOwnOrigin({ origin, referer, host, publicBaseUrl }: FormHeaders): boolean {
  const witness = origin ?? referer;
  if (witness === undefined) return true;
  if (!URL.canParse(witness)) return false;
  const url = new URL(witness);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  if (publicBaseUrl !== undefined && URL.canParse(publicBaseUrl) && new URL(publicBaseUrl).origin === url.origin) return true;
  if (host === undefined) return false;
  // Host read as an authority of the witness's scheme, so that `localhost:80` is `http://localhost`'s.
  if (!/^[^@/\\?#]+$/.test(host)) return false;
  const own = `${url.protocol}//${host}`;
  return URL.canParse(own) && new URL(own).host === url.host;
}
