import type { Ledger } from '../commands/ledger';
import type { SignupConfig } from '../config/schema';
import type { EventStore } from '../events/store/port';
import { mailerOf, type MailLog, type MailSettings } from '../mail/mailer';
import type { Sql } from '../storage/sql';
import { EmailChanges } from './email-change';
import { Logins } from './logins';
import { PasswordSignIn } from './password-sign-in';
import { SignUps } from './sign-up';

export interface HolderAccounts {
  readonly logins: Logins;
  readonly signUps: SignUps;
  readonly passwords: PasswordSignIn;
  readonly emailChanges: EmailChanges;
  /** Forgets old attempts and links (an hourly chore). */
  purge(): Promise<void>;
  close(): void;
}

export interface HolderAccountParts {
  readonly sql: Sql;
  readonly store: EventStore;
  readonly ledger: Ledger;
  readonly mail: MailSettings;
  /** The config's `signup` now (a reload changes it). */
  readonly config: () => SignupConfig | undefined;
  readonly now: () => number;
  /** The app's logger once it exists (the outbox logs each mail's link). */
  readonly log: () => MailLog | null;
}

/** The parts of a holder's own account, their tables migrated: what createGateway wires into the app. */
export async function openHolderAccounts(parts: HolderAccountParts): Promise<HolderAccounts> {
  const logins = new Logins(parts.sql, parts.now);
  await logins.migrate();
  const mailer = mailerOf(parts.mail, parts.log);
  const signUps = new SignUps({ ledger: parts.ledger, logins, mailer, store: parts.store, config: parts.config, now: parts.now });
  const passwords = new PasswordSignIn({ ledger: parts.ledger, logins, mailer, store: parts.store, signUps, now: parts.now });
  const emailChanges = new EmailChanges({ logins, mailer, store: parts.store, now: parts.now });
  return { logins, signUps, passwords, emailChanges, purge: () => logins.purge(), close: () => mailer.close() };
}
