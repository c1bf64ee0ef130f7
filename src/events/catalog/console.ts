import { z } from 'zod';
import { Timestamp, defineEvent, type EventOf } from './codec';

/** The stream of an account's console sign-ins: `console-{accountId}`. Events name a link or a
 * session by a short fingerprint (the first 12 hex digits of its SHA-256), never the secret. */
export const consoleStream = (accountId: string) => `console-${accountId}`;

export const ConsoleLinkIssued = defineEvent('ConsoleLinkIssued', z.object({ link: z.string(), expires_at: Timestamp, at: Timestamp }));
export const ConsoleSignedIn = defineEvent('ConsoleSignedIn', z.object({ link: z.string(), session: z.string(), expires_at: Timestamp, ip: z.string(), at: Timestamp }));
export const ConsoleSignedOut = defineEvent('ConsoleSignedOut', z.object({ session: z.string(), at: Timestamp }));

/** The gateway ended a session its holder did not sign out of: `reason` `account_inactive` (the
 * account was deactivated). Actor `system`. */
export const ConsoleSessionEnded = defineEvent('ConsoleSessionEnded', z.object({ session: z.string(), reason: z.literal('account_inactive'), at: Timestamp }));

export const consoleEvents = [ConsoleLinkIssued, ConsoleSignedIn, ConsoleSignedOut, ConsoleSessionEnded] as const;

export type ConsoleEvent = EventOf<(typeof consoleEvents)[number]>;
