import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logins } from '../accounts/logins';
import type { PasswordSignIn } from '../accounts/password-sign-in';
import type { EmailChanges } from '../accounts/email-change';
import type { SignUps } from '../accounts/sign-up';
import { baseUrlOf } from '../http/resources/wiki';
import { formatUsd, parseUsd } from '../money/usd';
import { accountPage, checkMailPage, confirmEmailPage, forgotPasswordPage, resetPasswordPage, signUpClosedPage, signUpPage, verifiedPage, verifyEmailPage } from './account-pages';
import { doc, FORM_BYTES } from './forms';
import { field, INACTIVE } from './guard';
import { html, type Html } from './html';
import { notice, type ConsoleViewer } from './layout';
import { signInPage } from './pages';
import type { ConsoleSessions } from './sessions';

// A holder's own account in the console (issue 34): sign-up, email verification, password sign-in,
// reset by an emailed link, and the account page (password change, sign out everywhere). Who may is
// src/accounts; this turns it into pages, cookies and the sessions' ends.

export interface AccountRouteParts {
  readonly signUps: SignUps;
  readonly passwords: PasswordSignIn;
  readonly emailChanges: EmailChanges;
  readonly logins: Logins;
  readonly sessions: ConsoleSessions;
  readonly publicBaseUrl: string | undefined;
  readonly now: () => number;
  readonly viewerOf: (request: FastifyRequest) => ConsoleViewer;
  readonly setSession: (request: FastifyRequest, reply: FastifyReply, value: string, maxAge: number) => unknown;
  readonly send: (reply: FastifyReply, status: number, title: string, body: Html, viewer: ConsoleViewer | null, current?: string) => unknown;
}

const PUBLIC = { consolePublic: true } as const;
const minutes = (seconds: number) => Math.ceil(seconds / 60);

export function accountRoutes(app: FastifyInstance, parts: AccountRouteParts): void {
  const { signUps, passwords, emailChanges, logins, sessions, viewerOf, setSession, send, now } = parts;
  const grantText = () => (signUps.config.require_email_verification ? formatUsd(parseUsd(signUps.config.grant_usd)) : null);
  const baseUrl = (request: FastifyRequest) => baseUrlOf(request, parts.publicBaseUrl);

  // ---- sign-up and verification ----
  app.get('/sign-up', { config: { ...PUBLIC, openapi: doc('consoleSignUpPage', 'The sign-up page (when the gateway takes sign-ups)', 'GET') } }, async (_request, reply) =>
    signUps.config.enabled ? send(reply, 200, 'Sign up', signUpPage({ email: '', name: '' }, null, grantText()), null) : send(reply, 404, 'Sign up', signUpClosedPage(), null),
  );

  app.post('/sign-up', { bodyLimit: FORM_BYTES, config: { ...PUBLIC, openapi: doc('consoleSignUp', 'Sign up: email, display name, password; a verification link is mailed', 'POST') } }, async (request, reply) => {
    const values = { email: field(request.body, 'email').slice(0, 254), name: field(request.body, 'name').slice(0, 100) };
    const result = await signUps.signUp({ ...values, password: field(request.body, 'password'), ip: request.ip, baseUrl: baseUrl(request) });
    if (result.ok) return reply.redirect('/console/sign-up/done', 303);
    if (result.code === 'signup_disabled') return send(reply, 404, 'Sign up', signUpClosedPage(), null);
    if (result.code === 'too_many_signups') reply.header('retry-after', String(result.retryAfter));
    return send(reply, result.code === 'too_many_signups' ? 429 : 400, 'Sign up', signUpPage(values, notice(result.message, 'error'), grantText()), null);
  });

  app.get('/sign-up/done', { config: { ...PUBLIC, openapi: doc('consoleSignUpDone', 'After a sign-up: check your mailbox', 'GET') } }, async (_request, reply) =>
    send(reply, 200, 'Check your mailbox', checkMailPage(signUps.acceptedMessage()), null),
  );

  app.get('/verify-email', { config: { ...PUBLIC, openapi: doc('consoleVerifyEmailPage', "The verification page (the link's code is in its fragment)", 'GET') } }, async (_request, reply) =>
    send(reply, 200, 'Confirm your address', verifyEmailPage(null), null),
  );

  app.post('/verify-email', { bodyLimit: FORM_BYTES, config: { ...PUBLIC, openapi: doc('consoleVerifyEmail', 'Verify the address by its mailed link: the trial credit is granted (once)', 'POST') } }, async (request, reply) => {
    const verified = await signUps.verifyEmail(field(request.body, 'token').trim());
    if (verified.ok) return send(reply, 200, 'Address confirmed', verifiedPage(verified.granted === null ? null : formatUsd(verified.granted)), null);
    const why = {
      unknown: 'This confirmation code is not one we issued. Check that you copied the whole link.',
      used: 'This link was used already: your address is confirmed. Sign in.',
      expired: 'This link has expired (a link works for 24 hours). Sign up again with the same address for a new one.',
    }[verified.reason];
    return send(reply, verified.reason === 'unknown' ? 400 : 410, 'Confirm your address', verifyEmailPage(notice(why, 'error')), null);
  });

  // ---- password sign-in ----
  app.post('/sign-in/password', { bodyLimit: FORM_BYTES, config: { ...PUBLIC, openapi: doc('consoleSignInWithPassword', 'Sign in with email address and password: starts a session (cookie scoped to /console)', 'POST') } }, async (request, reply) => {
    const email = field(request.body, 'email').slice(0, 254);
    const result = await passwords.signIn(email, field(request.body, 'password'), request.ip);
    if (result.ok) {
      const { sessionId, session } = await sessions.openWithPassword(result.accountId, request.ip);
      setSession(request, reply, sessionId, session.expiresAt - now());
      return reply.redirect('/console/', 303);
    }
    const refused = (status: number, text: string) => send(reply, status, 'Sign in', signInPage(notice(text, 'error'), signUps.config.enabled, email), null);
    if (result.reason === 'too_many_attempts') {
      reply.header('retry-after', String(result.retryAfter));
      return refused(429, `Too many sign-in attempts: wait ${minutes(result.retryAfter)} minutes and try again, or reset your password.`);
    }
    if (result.reason === 'unverified') return refused(403, 'Confirm your email address first: open the link we mailed you. No mail? Sign up again with the same address for a new link.');
    if (result.reason === 'inactive') return refused(403, INACTIVE);
    return refused(401, 'The email address or the password is wrong.');
  });

  // ---- password reset ----
  app.get('/forgot-password', { config: { ...PUBLIC, openapi: doc('consoleForgotPasswordPage', 'Ask for a password reset link', 'GET') } }, async (_request, reply) =>
    send(reply, 200, 'Forgot your password?', forgotPasswordPage(null), null),
  );

  app.post('/forgot-password', { bodyLimit: FORM_BYTES, config: { ...PUBLIC, openapi: doc('consoleForgotPassword', 'Mail a password reset link (30 minutes, single use) if the address has an account', 'POST') } }, async (request, reply) => {
    const asked = await passwords.requestReset(field(request.body, 'email').slice(0, 254), request.ip, baseUrl(request));
    if (!asked.ok) {
      reply.header('retry-after', String(asked.retryAfter));
      return send(reply, 429, 'Forgot your password?', forgotPasswordPage(notice(`Too many reset requests: wait ${minutes(asked.retryAfter)} minutes and try again.`, 'error')), null);
    }
    return send(reply, 200, 'Forgot your password?', forgotPasswordPage(notice('If this address has an account, a mail with a reset link is on its way to it. The link works once, for 30 minutes.')), null);
  });

  app.get('/reset-password', { config: { ...PUBLIC, openapi: doc('consoleResetPasswordPage', "The new password page (the reset link's code is in its fragment)", 'GET') } }, async (_request, reply) =>
    send(reply, 200, 'Choose a new password', resetPasswordPage(null), null),
  );

  app.post('/reset-password', { bodyLimit: FORM_BYTES, config: { ...PUBLIC, openapi: doc('consoleResetPassword', 'Set a new password by a reset link: every session of the account ends', 'POST') } }, async (request, reply) => {
    const reset = await passwords.reset(field(request.body, 'token').trim(), field(request.body, 'password'), request.ip);
    if (!reset.ok) {
      const why = {
        unknown: 'This reset code is not one we issued. Check that you copied the whole link.',
        used: 'This reset link was used already: a link works once. Ask for a new one.',
        expired: 'This reset link has expired: a link works for 30 minutes. Ask for a new one.',
        weak: reset.message ?? 'This password cannot be used.',
      }[reset.reason];
      const status = { unknown: 400, weak: 400, used: 410, expired: 410 }[reset.reason];
      return send(reply, status, 'Choose a new password', resetPasswordPage(html`${notice(why, 'error')}${reset.reason === 'weak' ? '' : html`<p><a href="/console/forgot-password">Ask for a new link</a></p>`}`), null);
    }
    await sessions.endAccountSessions(reset.accountId, 'password_changed', 'signin');
    setSession(request, reply, '', 0);
    return send(reply, 200, 'Sign in', signInPage(notice('Your new password is set and every session of your account has ended. Sign in with it.'), signUps.config.enabled), null);
  });

  // ---- the signed-in holder's account ----
  app.get('/account', { config: { openapi: doc('consoleAccount', 'The account page: password change, sign out everywhere', 'GET') } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const login = await logins.byAccount(viewer.accountId);
    return send(reply, 200, 'Account', accountPage(viewer, login?.email ?? null, null), viewer, '/console/account');
  });

  app.post('/account/password', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleChangePassword', 'Change the password (the current one is asked): every session of the account ends', 'POST') } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const changed = await passwords.change(viewer.accountId, field(request.body, 'current'), field(request.body, 'password'), request.ip, viewer.actor);
    if (!changed.ok) {
      const login = await logins.byAccount(viewer.accountId);
      return send(reply, 400, 'Account', accountPage(viewer, login?.email ?? null, notice(changed.message, 'error')), viewer, '/console/account');
    }
    await sessions.endAccountSessions(viewer.accountId, 'password_changed', viewer.actor);
    setSession(request, reply, '', 0);
    return send(reply, 200, 'Sign in', signInPage(notice('Your password is changed and every session of your account has ended. Sign in with the new one.'), signUps.config.enabled), null);
  });

  app.post('/account/email', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleChangeEmail', 'Change the email address (the current password is asked): a link to the new address confirms it', 'POST') } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const asked = await emailChanges.request(viewer.accountId, field(request.body, 'email').slice(0, 254), field(request.body, 'current'), request.ip, baseUrl(request), viewer.actor);
    const login = await logins.byAccount(viewer.accountId);
    return send(reply, asked.ok ? 200 : 400, 'Account', accountPage(viewer, login?.email ?? null, notice(asked.message, asked.ok ? 'info' : 'error')), viewer, '/console/account');
  });

  app.get('/confirm-email', { config: { ...PUBLIC, openapi: doc('consoleConfirmEmailPage', "The new address's confirmation page (the link's code is in its fragment)", 'GET') } }, async (_request, reply) =>
    send(reply, 200, 'Confirm your new address', confirmEmailPage(null), null),
  );

  app.post('/confirm-email', { bodyLimit: FORM_BYTES, config: { ...PUBLIC, openapi: doc('consoleConfirmEmail', 'Confirm a new email address by its mailed link', 'POST') } }, async (request, reply) => {
    const confirmed = await emailChanges.confirm(field(request.body, 'token').trim());
    if (confirmed.ok) return send(reply, 200, 'Confirm your new address', html`<h1>Address changed</h1>${notice(`Your account's address is now ${confirmed.email}: sign in with it.`)}<p><a href="/console/sign-in">Sign in</a></p>`, null);
    const why = {
      unknown: 'This confirmation code is not one we issued. Check that you copied the whole link.',
      used: 'This link was used already.',
      expired: 'This link has expired (a link works for 24 hours). Ask for the change again on the Account page.',
      taken: 'This address has another account now: nothing was changed.',
    }[confirmed.reason];
    return send(reply, { unknown: 400, used: 410, expired: 410, taken: 409 }[confirmed.reason], 'Confirm your new address', confirmEmailPage(notice(why, 'error')), null);
  });

  app.post('/sign-out-everywhere', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleSignOutEverywhere', 'End every session of the account, on every device', 'POST') } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const ended = await sessions.endAccountSessions(viewer.accountId, 'signed_out_everywhere', viewer.actor);
    setSession(request, reply, '', 0);
    return send(reply, 200, 'Signed out', html`<h1>Signed out everywhere</h1><p>${ended === 1 ? 'Your session has ended.' : `All ${ended} sessions of your account have ended.`} <a href="/console/sign-in">Sign in</a> again.</p>`, null);
  });
}
