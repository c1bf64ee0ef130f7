import { html, type Html } from './html';
import { csrfField, notice, type ConsoleViewer } from './layout';

// The pages of a holder's own account (issue 34): sign-up, email verification, password reset, and the
// signed-in account page (password change, sign out everywhere). The sign-in page is pages.ts's.

export interface SignUpValues {
  readonly email: string;
  readonly name: string;
}

export function signUpPage(values: SignUpValues, message: Html | null, grant: string | null): Html {
  return html`<h1>Sign up</h1>
${message}
<p>Open an account of your own${grant ? html`: once you confirm your email address, it gets <strong>${grant} USD</strong> of trial credit` : ''}.
Already have one? <a href="/console/sign-in">Sign in</a>.</p>
<form method="post" action="/console/sign-up">
<label for="email">Email address</label>
<input type="email" id="email" name="email" autocomplete="email" required maxlength="254" value="${values.email}">
<label for="name">Display name</label>
<input type="text" id="name" name="name" autocomplete="name" required maxlength="100" value="${values.name}">
<label for="password">Password (at least 10 characters)</label>
<input type="password" id="password" name="password" autocomplete="new-password" required minlength="10" maxlength="200">
<p><button type="submit" id="sign-up">Create account</button></p>
</form>`;
}

export function signUpClosedPage(): Html {
  return html`<h1>Sign up</h1>${notice('Sign-up is switched off on this gateway: ask its operator for an account.', 'error')}<p><a href="/console/sign-in">Sign in</a></p>`;
}

export function checkMailPage(message: string): Html {
  return html`<h1>Check your mailbox</h1>${notice(message)}<p>No mail within a few minutes? Look in the spam folder, or <a href="/console/sign-up">sign up again</a> with the same address for a new link.</p>`;
}

export function verifyEmailPage(message: Html | null): Html {
  return html`<h1>Confirm your email address</h1>
${message}
<p>Open the link from the mail: it fills in the code below.</p>
<form method="post" action="/console/verify-email">
<label for="token">Confirmation code (the part of the link after <code>#</code>)</label>
<input type="text" id="token" name="token" autocomplete="off" required spellcheck="false">
<p><button type="submit" id="verify">Confirm my address</button></p>
</form>`;
}

export function verifiedPage(granted: string | null): Html {
  return html`<h1>Address confirmed</h1>
${notice(granted ? html`Your address is confirmed and <strong>${granted} USD</strong> of trial credit is in your wallet.` : 'Your address is confirmed.')}
<p><a href="/console/sign-in">Sign in</a> with your address and password.</p>`;
}

export function forgotPasswordPage(message: Html | null): Html {
  return html`<h1>Forgot your password?</h1>
${message}
<p>Enter your account's email address: we mail it a link to choose a new password (it works once, for 30 minutes).</p>
<form method="post" action="/console/forgot-password">
<label for="email">Email address</label>
<input type="email" id="email" name="email" autocomplete="email" required maxlength="254">
<p><button type="submit" id="send-reset">Mail me a link</button></p>
</form>`;
}

export function resetPasswordPage(message: Html | null): Html {
  return html`<h1>Choose a new password</h1>
${message}
<p>Setting a new password signs you out everywhere.</p>
<form method="post" action="/console/reset-password">
<label for="token">Reset code (the part of the link after <code>#</code>)</label>
<input type="text" id="token" name="token" autocomplete="off" required spellcheck="false">
<label for="password">New password (at least 10 characters)</label>
<input type="password" id="password" name="password" autocomplete="new-password" required minlength="10" maxlength="200">
<p><button type="submit" id="reset">Set the new password</button></p>
</form>`;
}

export function confirmEmailPage(message: Html | null): Html {
  return html`<h1>Confirm your new address</h1>
${message}
<p>Open the link from the mail: it fills in the code below.</p>
<form method="post" action="/console/confirm-email">
<label for="token">Confirmation code (the part of the link after <code>#</code>)</label>
<input type="text" id="token" name="token" autocomplete="off" required spellcheck="false">
<p><button type="submit" id="confirm-email">Use this address</button></p>
</form>`;
}

/** The signed-in holder's account page: `email` null for an account the operator opened (no password). */
export function accountPage(viewer: ConsoleViewer, email: string | null, message: Html | null): Html {
  return html`<h1>Account</h1>
${message}
<dl class="facts"><dt>Account</dt><dd><code>${viewer.accountId}</code></dd><dt>Email address</dt><dd>${email ?? 'none: you sign in with links from your operator'}</dd></dl>
${
  email
    ? html`<h2>Change your password</h2>
<form method="post" action="/console/account/password">${csrfField(viewer)}
<label for="current">Current password</label>
<input type="password" id="current" name="current" autocomplete="current-password" required maxlength="200">
<label for="password">New password (at least 10 characters)</label>
<input type="password" id="password" name="password" autocomplete="new-password" required minlength="10" maxlength="200">
<p><button type="submit" id="change-password">Change password</button> It signs you out everywhere, here too.</p>
</form>
<h2>Change your email address</h2>
<form method="post" action="/console/account/email">${csrfField(viewer)}
<label for="new-email">New email address</label>
<input type="email" id="new-email" name="email" autocomplete="email" required maxlength="254">
<label for="email-current">Your password</label>
<input type="password" id="email-current" name="current" autocomplete="current-password" required maxlength="200">
<p><button type="submit" id="change-email">Change email address</button> A link to the new address confirms it.</p>
</form>`
    : ''
}
<h2>Sessions</h2>
<form method="post" action="/console/sign-out-everywhere">${csrfField(viewer)}
<p><button type="submit" class="secondary" id="sign-out-everywhere">Sign out everywhere</button> Ends every session of this account, on every device.</p>
</form>`;
}
