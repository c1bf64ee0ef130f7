import { randomUUID } from 'node:crypto';
import { consoleStream, schemaVersion } from '../events/catalog';
import type { EventStore, Position } from '../events/store/port';
import type { Mail } from '../mail/mailer';

// What the gateway mails a holder, and the audit events of a holder's own account (stream
// `console-{account}`, beside the console's sign-ins). No event carries a password, a hash or a link's secret.

export const verifyMail = (to: string, link: string, grant: string | null): Mail => ({
  to,
  subject: 'Confirm your email address',
  link,
  text: `Welcome to the model gateway.

Open this link to confirm your address${grant ? ` and receive your ${grant} USD of trial credit` : ''}:

${link}

The link works once, for 24 hours. If you did not sign up, ignore this mail: nothing else happens.
`,
});

export const resetMail = (to: string, link: string): Mail => ({
  to,
  subject: 'Reset your password',
  link,
  text: `Someone asked to reset the password of your model gateway account.

Open this link to choose a new password (it works once, for 30 minutes):

${link}

Setting a new password signs you out everywhere. If you did not ask for this, ignore this mail.
`,
});

export const changeEmailMail = (to: string, link: string): Mail => ({
  to,
  subject: 'Confirm your new email address',
  link,
  text: `Someone signed in to a model gateway account asked to use this address for it.

Open this link to confirm it (it works once, for 24 hours):

${link}

If you did not ask for this, ignore this mail: nothing changes.
`,
});

export const repeatedSignUpMail = (to: string, signInUrl: string, resetUrl: string): Mail => ({
  to,
  subject: 'Someone tried to sign up with your address',
  text: `Someone tried to open a model gateway account with this address, which already has one.
Nothing was changed and no account was opened.

If it was you: sign in at ${signInUrl}
Forgot your password? ${resetUrl}
`,
});

/** Appends one audit event to the account's console stream. */
export async function recordAccountEvent(store: EventStore, accountId: string, type: string, data: Record<string, unknown>, actor: string): Promise<Position> {
  const result = await store.append(consoleStream(accountId), [{ id: randomUUID(), type, data, metadata: { actor, schema_version: schemaVersion(type) } }], 'any');
  return result.position;
}
