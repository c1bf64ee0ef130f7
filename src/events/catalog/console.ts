import { z } from 'zod';
import { Timestamp, defineEvent, type EventOf } from './codec';

/** The stream of an account's console sign-ins: `console-{accountId}`. Events name a link or a
 * session by a short fingerprint (the first 12 hex digits of its SHA-256), never the secret. */
export const consoleStream = (accountId: string) => `console-${accountId}`;

export const ConsoleLinkIssued = defineEvent('ConsoleLinkIssued', z.object({ link: z.string(), expires_at: Timestamp, at: Timestamp }));
export const ConsoleSignedIn = defineEvent('ConsoleSignedIn', z.object({ link: z.string(), session: z.string(), expires_at: Timestamp, ip: z.string(), at: Timestamp }));
export const ConsoleSignedOut = defineEvent('ConsoleSignedOut', z.object({ session: z.string(), at: Timestamp }));

/** The gateway ended a session its holder did not sign out of: `reason` `account_inactive` (the
 * account was deactivated; actor `system`), `password_changed` (a reset or a change of the password),
 * `signed_out_everywhere` (the holder's "sign out everywhere"). */
export const ConsoleSessionEnded = defineEvent(
  'ConsoleSessionEnded',
  z.object({ session: z.string(), reason: z.enum(['account_inactive', 'password_changed', 'signed_out_everywhere']), at: Timestamp }),
);

// A holder's own account (issue 34). No event carries a password, its hash or a link's secret: links are
// named by fingerprint as above.

/** The holder opened the account at /console/sign-up (or its JSON endpoint). `verification`: whether
 * the trial grant waits for the address to be verified. Actor `signup`. */
export const AccountSignedUp = defineEvent(
  'AccountSignedUp',
  z.object({ email: z.string(), ip: z.string(), verification: z.enum(['required', 'not_required']), at: Timestamp }),
);
/** A mail was handed to the mailer: `kind` what it is for, `link` the fingerprint of its link (none for
 * the notice that someone tried to sign up with the address again). */
export const AccountMailSent = defineEvent(
  'AccountMailSent',
  z.object({ kind: z.enum(['verify_email', 'password_reset', 'signup_repeated', 'change_email']), link: z.string().nullable(), expires_at: Timestamp.nullable(), at: Timestamp }),
);
/** Someone signed up again with the address of this account: nothing was opened. */
export const AccountSignUpRepeated = defineEvent('AccountSignUpRepeated', z.object({ ip: z.string(), at: Timestamp }));
export const AccountEmailVerified = defineEvent('AccountEmailVerified', z.object({ email: z.string(), link: z.string(), at: Timestamp }));
export const ConsolePasswordSignedIn = defineEvent('ConsolePasswordSignedIn', z.object({ session: z.string(), expires_at: Timestamp, ip: z.string(), at: Timestamp }));
/** A password sign-in refused for this account: a wrong password, too many attempts, an address not verified. */
export const ConsoleSignInRefused = defineEvent(
  'ConsoleSignInRefused',
  z.object({ reason: z.enum(['wrong_password', 'too_many_attempts', 'email_unverified']), ip: z.string(), at: Timestamp }),
);
export const PasswordResetRequested = defineEvent('PasswordResetRequested', z.object({ link: z.string(), expires_at: Timestamp, ip: z.string(), at: Timestamp }));
/** `how`: `reset` (by an emailed link, named by `link`) or `change` (signed in, with the old password). */
export const PasswordChanged = defineEvent(
  'PasswordChanged',
  z.object({ how: z.enum(['reset', 'change']), link: z.string().nullable(), ip: z.string(), at: Timestamp }),
);

/** A signed-in holder asked to change the address to `to`: a link was mailed there to confirm it. */
export const AccountEmailChangeRequested = defineEvent('AccountEmailChangeRequested', z.object({ to: z.string(), link: z.string(), expires_at: Timestamp, ip: z.string(), at: Timestamp }));
/** The new address was confirmed by its link: sign-in and mail use it from now on. */
export const AccountEmailChanged = defineEvent('AccountEmailChanged', z.object({ from: z.string(), to: z.string(), link: z.string(), at: Timestamp }));

export const consoleEvents = [
  ConsoleLinkIssued,
  ConsoleSignedIn,
  ConsoleSignedOut,
  ConsoleSessionEnded,
  AccountSignedUp,
  AccountMailSent,
  AccountSignUpRepeated,
  AccountEmailVerified,
  ConsolePasswordSignedIn,
  ConsoleSignInRefused,
  PasswordResetRequested,
  PasswordChanged,
  AccountEmailChangeRequested,
  AccountEmailChanged,
] as const;

export type ConsoleEvent = EventOf<(typeof consoleEvents)[number]>;
