import type { Ledger } from '../commands/ledger';
import type { EventStore } from '../events/store/port';
import type { Mailer } from '../mail/mailer';
import type { Logins } from './logins';
import { recordAccountEvent, resetMail } from './mails';
import { decoyHash, hashPassword, passwordProblem, verifyPassword } from './passwords';
import { emailOf, type SignUps } from './sign-up';

/**
 * Password sign-in, reset by an emailed link and change (issue 34). The console makes the session
 * (src/console/sessions.ts) and ends the old ones on a reset or change; this decides who may. Failed
 * attempts are limited per account (5 per 15 minutes, then even the right password waits) and all
 * attempts per client address (20 per 15 minutes), counted in the database so every instance sees them.
 * An unknown address is answered like a wrong password, after as long a wait (a decoy hash).
 */

export const ACCOUNT_FAILURES_MAX = 5;
export const ADDRESS_ATTEMPTS_MAX = 20;
export const ATTEMPT_WINDOW_S = 15 * 60;
/** Reset requests per address and per email address per hour. */
export const RESETS_PER_HOUR = 5;

export type SignInResult =
  | { readonly ok: true; readonly accountId: string }
  | { readonly ok: false; readonly reason: 'wrong' | 'unverified' | 'inactive' }
  | { readonly ok: false; readonly reason: 'too_many_attempts'; readonly retryAfter: number };

export type ResetResult =
  | { readonly ok: true; readonly accountId: string }
  | { readonly ok: false; readonly reason: 'unknown' | 'used' | 'expired' | 'weak'; readonly message?: string };

export interface PasswordParts {
  readonly ledger: Ledger;
  readonly logins: Logins;
  readonly mailer: Mailer;
  readonly store: EventStore;
  readonly signUps: SignUps;
  readonly now: () => number;
}

export class PasswordSignIn {
  constructor(private readonly parts: PasswordParts) {}

  async signIn(emailText: string, password: string, ip: string): Promise<SignInResult> {
    const { logins, ledger, store, now } = this.parts;
    const byAddress = await logins.attempts('signin-ip', ip, ATTEMPT_WINDOW_S);
    if (byAddress.count >= ADDRESS_ATTEMPTS_MAX) return { ok: false, reason: 'too_many_attempts', retryAfter: byAddress.retryAfter };
    await logins.recordAttempt('signin-ip', ip);
    const email = emailOf(emailText);
    const login = email ? await logins.byEmail(email) : null;
    if (!login || password.length === 0 || password.length > 1000) {
      await verifyPassword(password.slice(0, 1000), await decoyHash());
      return { ok: false, reason: 'wrong' };
    }
    const failures = await logins.attempts('signin-fail', login.accountId, ATTEMPT_WINDOW_S);
    if (failures.count >= ACCOUNT_FAILURES_MAX) {
      await recordAccountEvent(store, login.accountId, 'ConsoleSignInRefused', { reason: 'too_many_attempts', ip, at: now() }, 'signin');
      return { ok: false, reason: 'too_many_attempts', retryAfter: failures.retryAfter };
    }
    if (!(await verifyPassword(password, login.passwordHash))) {
      await logins.recordAttempt('signin-fail', login.accountId);
      await recordAccountEvent(store, login.accountId, 'ConsoleSignInRefused', { reason: 'wrong_password', ip, at: now() }, 'signin');
      return { ok: false, reason: 'wrong' };
    }
    if (login.verifiedAt === null && this.parts.signUps.config.require_email_verification) {
      await recordAccountEvent(store, login.accountId, 'ConsoleSignInRefused', { reason: 'email_unverified', ip, at: now() }, 'signin');
      return { ok: false, reason: 'unverified' };
    }
    if ((await ledger.wallet(login.accountId)).status !== 'active') return { ok: false, reason: 'inactive' };
    await logins.clearAttempts('signin-fail', login.accountId);
    // A verification whose grant did not go through (a crash between the two) is made good here.
    if (login.verifiedAt !== null) await this.parts.signUps.grantOnce(login.accountId);
    return { ok: true, accountId: login.accountId };
  }

  /** Mails a reset link when the address has an account; the answer is the same when it has none. */
  async requestReset(emailText: string, ip: string, baseUrl: string): Promise<{ ok: true } | { ok: false; retryAfter: number }> {
    const { logins, mailer, store, now } = this.parts;
    const email = emailOf(emailText) ?? emailText.trim().toLowerCase().slice(0, 254);
    const [byIp, byEmail] = await Promise.all([logins.attempts('reset-ip', ip, 3600), logins.attempts('reset-email', email, 3600)]);
    if (byIp.count >= RESETS_PER_HOUR || byEmail.count >= RESETS_PER_HOUR) return { ok: false, retryAfter: Math.max(byIp.retryAfter, byEmail.retryAfter) };
    await Promise.all([logins.recordAttempt('reset-ip', ip), logins.recordAttempt('reset-email', email)]);
    const login = await logins.byEmail(email);
    if (!login) return { ok: true };
    const link = await logins.issueLink(login.accountId, 'password_reset');
    await recordAccountEvent(store, login.accountId, 'PasswordResetRequested', { link: link.fingerprint, expires_at: link.expiresAt, ip, at: now() }, 'signin');
    await mailer.send(resetMail(login.email, `${baseUrl}/console/reset-password#${link.token}`));
    await recordAccountEvent(store, login.accountId, 'AccountMailSent', { kind: 'password_reset', link: link.fingerprint, expires_at: link.expiresAt, at: now() }, 'signin');
    return { ok: true };
  }

  /** Sets the new password of a reset link's account (the link works once; the others end with it). */
  async reset(token: string, password: string, ip: string): Promise<ResetResult> {
    const { logins, store, now } = this.parts;
    const weak = passwordProblem(password);
    if (weak) return { ok: false, reason: 'weak', message: weak };
    const redeemed = token.length > 0 && token.length <= 200 ? await logins.redeem(token, 'password_reset') : ({ ok: false, reason: 'unknown' } as const);
    if (!redeemed.ok) return redeemed;
    await logins.setPassword(redeemed.accountId, await hashPassword(password));
    await logins.useUpLinks(redeemed.accountId, 'password_reset');
    await logins.clearAttempts('signin-fail', redeemed.accountId);
    await recordAccountEvent(store, redeemed.accountId, 'PasswordChanged', { how: 'reset', link: redeemed.link, ip, at: now() }, 'signin');
    return { ok: true, accountId: redeemed.accountId };
  }

  /** A signed-in holder's change, with the current password; `actor` the session's. */
  async change(accountId: string, current: string, next: string, ip: string, actor: string): Promise<{ ok: true } | { ok: false; message: string }> {
    const { logins, store, now } = this.parts;
    const login = await logins.byAccount(accountId);
    if (!login) return { ok: false, message: 'This account has no password: it signs in with links from the operator.' };
    const failures = await logins.attempts('signin-fail', accountId, ATTEMPT_WINDOW_S);
    if (failures.count >= ACCOUNT_FAILURES_MAX) return { ok: false, message: `Too many wrong passwords: try again in ${Math.ceil(failures.retryAfter / 60)} minutes.` };
    if (!(await verifyPassword(current, login.passwordHash))) {
      await logins.recordAttempt('signin-fail', accountId);
      return { ok: false, message: 'The current password is wrong: nothing was changed.' };
    }
    const weak = passwordProblem(next);
    if (weak) return { ok: false, message: weak };
    await logins.setPassword(accountId, await hashPassword(next));
    await logins.useUpLinks(accountId, 'password_reset');
    await recordAccountEvent(store, accountId, 'PasswordChanged', { how: 'change', link: null, ip, at: now() }, actor);
    return { ok: true };
  }
}
