import type { EventStore } from '../events/store/port';
import type { Mailer } from '../mail/mailer';
import type { Logins } from './logins';
import { changeEmailMail, recordAccountEvent } from './mails';
import { ACCOUNT_FAILURES_MAX, ATTEMPT_WINDOW_S } from './password-sign-in';
import { verifyPassword } from './passwords';
import { emailOf } from './sign-up';

/**
 * A signed-in holder's change of address (issue 34): asked with the current password, mailed to the new
 * address, and made only when its link is opened, so an account never signs in by an address nobody
 * proved. An address that has another account gets the same answer and no mail (no enumeration).
 */
export class EmailChanges {
  constructor(private readonly parts: { readonly logins: Logins; readonly mailer: Mailer; readonly store: EventStore; readonly now: () => number }) {}

  async request(accountId: string, to: string, password: string, ip: string, baseUrl: string, actor: string): Promise<{ ok: true; message: string } | { ok: false; message: string }> {
    const { logins, mailer, store, now } = this.parts;
    const login = await logins.byAccount(accountId);
    if (!login) return { ok: false, message: 'This account has no email address: it signs in with links from the operator.' };
    const email = emailOf(to);
    if (email === null) return { ok: false, message: 'Enter an email address such as ada@example.com.' };
    const failures = await logins.attempts('signin-fail', accountId, ATTEMPT_WINDOW_S);
    if (failures.count >= ACCOUNT_FAILURES_MAX) return { ok: false, message: `Too many wrong passwords: try again in ${Math.ceil(failures.retryAfter / 60)} minutes.` };
    if (!(await verifyPassword(password, login.passwordHash))) {
      await logins.recordAttempt('signin-fail', accountId);
      return { ok: false, message: 'The current password is wrong: nothing was changed.' };
    }
    const answer = { ok: true as const, message: `A mail with a link is on its way to ${email}: open it to confirm the new address. Until then you sign in with ${login.email}.` };
    if (email === login.email || (await logins.byEmail(email))) return answer;
    const link = await logins.issueLink(accountId, 'change_email', email);
    await recordAccountEvent(store, accountId, 'AccountEmailChangeRequested', { to: email, link: link.fingerprint, expires_at: link.expiresAt, ip, at: now() }, actor);
    await mailer.send(changeEmailMail(email, `${baseUrl}/console/confirm-email#${link.token}`));
    await recordAccountEvent(store, accountId, 'AccountMailSent', { kind: 'change_email', link: link.fingerprint, expires_at: link.expiresAt, at: now() }, actor);
    return answer;
  }

  /** Makes the change a link confirms. */
  async confirm(token: string): Promise<{ ok: true; email: string } | { ok: false; reason: 'unknown' | 'used' | 'expired' | 'taken' }> {
    const { logins, store, now } = this.parts;
    const redeemed = token.length > 0 && token.length <= 200 ? await logins.redeem(token, 'change_email') : ({ ok: false, reason: 'unknown' } as const);
    if (!redeemed.ok) return redeemed;
    const login = await logins.byAccount(redeemed.accountId);
    if (!login || redeemed.email === null) return { ok: false, reason: 'unknown' };
    if (!(await logins.setEmail(redeemed.accountId, redeemed.email))) return { ok: false, reason: 'taken' };
    await recordAccountEvent(store, redeemed.accountId, 'AccountEmailChanged', { from: login.email, to: redeemed.email, link: redeemed.link, at: now() }, 'signin');
    return { ok: true, email: redeemed.email };
  }
}
