import { newAccountId, type Ledger } from '../commands/ledger';
import { SIGNUP_DEFAULTS, type SignupConfig } from '../config/schema';
import type { EventStore } from '../events/store/port';
import type { Mailer } from '../mail/mailer';
import { formatUsd, parseUsd } from '../money/usd';
import type { Logins } from './logins';
import { recordAccountEvent, repeatedSignUpMail, verifyMail } from './mails';
import { hashPassword, passwordProblem } from './passwords';

/**
 * A holder's own sign-up (issue 34): the account is opened through the same ledger command as the admin
 * API's, without a grant; the spec's trial credit (`signup.grant_usd`) is granted once the address is
 * verified (GrantTrialCredit: once per account, whatever the number of verifications). Trial farming is
 * the abuse every open gateway meets: attempts are limited per client address and per email address, and
 * an address already in use is answered exactly like a new one (no account enumeration); its owner is
 * told by mail instead.
 */

export interface SignUpRequest {
  readonly email: string;
  readonly password: string;
  readonly name: string;
  readonly ip: string;
  /** Base of the links mailed (PUBLIC_BASE_URL, else the address the request arrived on; never its Host header). */
  readonly baseUrl: string;
}

export type SignUpRefusal =
  | { readonly code: 'signup_disabled'; readonly message: string }
  | { readonly code: 'invalid_request'; readonly message: string; readonly field: 'email' | 'password' | 'name' }
  | { readonly code: 'too_many_signups'; readonly message: string; readonly retryAfter: number };

export type SignUpResult = { readonly ok: true; readonly message: string } | ({ readonly ok: false } & SignUpRefusal);

export type VerifyResult = { readonly ok: true; readonly accountId: string; readonly granted: bigint | null } | { readonly ok: false; readonly reason: 'unknown' | 'used' | 'expired' };

export interface SignUpParts {
  readonly ledger: Ledger;
  readonly logins: Logins;
  readonly mailer: Mailer;
  readonly store: EventStore;
  /** The config's `signup` now (a reload changes it). */
  readonly config: () => SignupConfig | undefined;
  readonly now: () => number;
}

const EMAIL = /^[^\s@"<>()[\],;:\\]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)+$/;
export const NAME_MAX = 100;
const HOUR_S = 3600;

/** The address as stored and compared: trimmed, lower case. Null when it is no address. */
export function emailOf(text: string): string | null {
  const email = text.trim().toLowerCase();
  return email.length <= 254 && EMAIL.test(email) ? email : null;
}

export class SignUps {
  constructor(private readonly parts: SignUpParts) {}

  get config(): SignupConfig {
    return this.parts.config() ?? SIGNUP_DEFAULTS;
  }

  /** The one answer of an accepted sign-up, the same whether the address was new or not. */
  acceptedMessage(): string {
    return this.config.require_email_verification
      ? 'Thank you. If this address can be used, a mail is on its way to it: open its link to confirm the address, then sign in.'
      : 'Thank you. If this address can be used, your account is open: sign in with your address and password.';
  }

  async signUp(request: SignUpRequest): Promise<SignUpResult> {
    const config = this.config;
    if (!config.enabled) return { ok: false, code: 'signup_disabled', message: 'Sign-up is switched off on this gateway: ask its operator for an account.' };
    const email = emailOf(request.email);
    if (email === null) return { ok: false, code: 'invalid_request', field: 'email', message: 'Enter an email address such as ada@example.com.' };
    const name = request.name.trim();
    if (name.length === 0 || name.length > NAME_MAX || /\p{Cc}/u.test(name))
      return { ok: false, code: 'invalid_request', field: 'name', message: `Enter a display name of 1 to ${NAME_MAX} characters.` };
    const weak = passwordProblem(request.password);
    if (weak) return { ok: false, code: 'invalid_request', field: 'password', message: weak };

    const { logins } = this.parts;
    const [byIp, byEmail] = await Promise.all([logins.attempts('signup-ip', request.ip, HOUR_S), logins.attempts('signup-email', email, HOUR_S)]);
    if (byIp.count >= config.per_ip_per_hour)
      return { ok: false, code: 'too_many_signups', retryAfter: byIp.retryAfter, message: `Too many sign-ups from your address: at most ${config.per_ip_per_hour} an hour. Try again in ${Math.ceil(byIp.retryAfter / 60)} minutes.` };
    if (byEmail.count >= config.per_email_per_hour)
      return { ok: false, code: 'too_many_signups', retryAfter: byEmail.retryAfter, message: `Too many sign-ups with this email address: at most ${config.per_email_per_hour} an hour. Try again in ${Math.ceil(byEmail.retryAfter / 60)} minutes.` };
    await Promise.all([logins.recordAttempt('signup-ip', request.ip), logins.recordAttempt('signup-email', email)]);

    // Hashed whether the address is new or not: both answers take about as long.
    const passwordHash = await hashPassword(request.password);
    const existing = await logins.byEmail(email);
    if (existing) await this.repeated(existing.accountId, existing.email, existing.verifiedAt !== null, request);
    else await this.open(email, name, passwordHash, request);
    return { ok: true, message: this.acceptedMessage() };
  }

  private async open(email: string, name: string, passwordHash: string, request: SignUpRequest): Promise<void> {
    const config = this.config;
    const { ledger, logins, store } = this.parts;
    const accountId = newAccountId();
    // The address is claimed first: of two sign-ups racing with it, one opens an account.
    if (!(await logins.claim({ accountId, email, passwordHash, ip: request.ip }))) {
      const winner = await logins.byEmail(email);
      if (winner) await this.repeated(winner.accountId, winner.email, winner.verifiedAt !== null, request);
      return;
    }
    const opened = await ledger.openAccount(name, 'signup', null, null, accountId);
    if (!opened.ok) {
      await logins.release(accountId);
      throw new Error(`the signed-up account could not be opened: ${opened.error.code} ${opened.error.message}`);
    }
    const verification = config.require_email_verification ? 'required' : 'not_required';
    await recordAccountEvent(store, accountId, 'AccountSignedUp', { email, ip: request.ip, verification, at: this.parts.now() }, 'signup');
    if (verification === 'not_required') {
      await ledger.grantTrial(accountId, parseUsd(config.grant_usd), 'signup');
      return;
    }
    await this.sendVerification(accountId, email, request.baseUrl);
  }

  /** The address has an account: nothing is opened; an unverified one gets a new link, a verified one a notice. */
  private async repeated(accountId: string, email: string, verified: boolean, request: SignUpRequest): Promise<void> {
    const { store, mailer } = this.parts;
    await recordAccountEvent(store, accountId, 'AccountSignUpRepeated', { ip: request.ip, at: this.parts.now() }, 'signup');
    if (!verified && this.config.require_email_verification) return this.sendVerification(accountId, email, request.baseUrl);
    await mailer.send(repeatedSignUpMail(email, `${request.baseUrl}/console/sign-in`, `${request.baseUrl}/console/forgot-password`));
    await recordAccountEvent(store, accountId, 'AccountMailSent', { kind: 'signup_repeated', link: null, expires_at: null, at: this.parts.now() }, 'signup');
  }

  private async sendVerification(accountId: string, email: string, baseUrl: string): Promise<void> {
    const { logins, mailer, store } = this.parts;
    const link = await logins.issueLink(accountId, 'verify_email');
    // The secret is in the fragment: it never reaches an access log or a Referer.
    await mailer.send(verifyMail(email, `${baseUrl}/console/verify-email#${link.token}`, formatUsd(parseUsd(this.config.grant_usd))));
    await recordAccountEvent(store, accountId, 'AccountMailSent', { kind: 'verify_email', link: link.fingerprint, expires_at: link.expiresAt, at: this.parts.now() }, 'signup');
  }

  /** Verifies the address of a link's account and grants the trial credit (once per account). */
  async verifyEmail(token: string): Promise<VerifyResult> {
    const { logins, store } = this.parts;
    const redeemed = token.length > 0 && token.length <= 200 ? await logins.redeem(token, 'verify_email') : ({ ok: false, reason: 'unknown' } as const);
    if (!redeemed.ok) return redeemed;
    const login = await logins.byAccount(redeemed.accountId);
    if (await logins.markVerified(redeemed.accountId))
      await recordAccountEvent(store, redeemed.accountId, 'AccountEmailVerified', { email: login?.email ?? '', link: redeemed.link, at: this.parts.now() }, 'signup');
    return { ok: true, accountId: redeemed.accountId, granted: await this.grantOnce(redeemed.accountId) };
  }

  /** The trial credit of a verified account, if it has not had it: what was granted now, else null. */
  async grantOnce(accountId: string): Promise<bigint | null> {
    const { ledger } = this.parts;
    if ((await ledger.wallet(accountId)).trialGranted) return null;
    const amount = parseUsd(this.config.grant_usd);
    const granted = await ledger.grantTrial(accountId, amount, 'signup');
    return granted.ok && granted.state.trialGranted ? amount : null;
  }
}
