/**
 * Issue 34: the zero-setup demo (`npm start`: the bundled config, no SMTP_URL) takes sign-ups. The
 * verification mail is written to DATA_DIR/outbox as an .eml file and its link logged, so a visitor can
 * open it; the operator lists the sign-up with `gateway accounts signups`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleParser } from 'mailparser';
import { ChildGateway } from '../support/child-gateway';

let gw: ChildGateway;
beforeAll(async () => {
  // LOG_LEVEL info, as `npm start` has it: the outbox's link is an info line.
  gw = await ChildGateway.prepare({ env: { LOG_LEVEL: 'info' } });
});
afterAll(() => gw.cleanup());

describe('sign-up in the embedded demo', () => {
  it('mails to the outbox, logs the link, grants 40.44 on verification, and lists the sign-up for the operator', { timeout: 180_000 }, async () => {
    await gw.start();
    const email = 'visitor@example.test';
    const signUp = await fetch(`${gw.base}/v1/accounts/sign-up`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'a demo password', name: 'Visitor' }),
    });
    expect(signUp.status).toBe(200);

    const outbox = join(gw.dataDir, 'outbox');
    const files = readdirSync(outbox).filter((f) => f.endsWith('.eml'));
    expect(files).toHaveLength(1);
    const eml = readFileSync(join(outbox, files[0]!), 'utf8');
    expect(eml).toContain(`To: ${email}`);
    expect(eml).toContain('Subject: Confirm your email address');
    const link = /https?:\/\/\S+\/console\/verify-email#[A-Za-z0-9_-]{43}/.exec((await simpleParser(eml)).text ?? '')![0];

    const listed = await gw.run(['accounts', 'signups']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^ACCOUNT_ID\s+EMAIL\s+NAME\s+STATUS\s+VERIFIED_AT\s+TRIAL_GRANTED/);
    expect(listed.stdout).toMatch(/visitor@example.test\s+Visitor\s+active\s+-\s+false/);
    expect(listed.stdout).toContain(email);

    const verify = await fetch(`${gw.base}/console/verify-email`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: link.slice(link.indexOf('#') + 1) }),
    });
    expect(verify.status).toBe(200);
    const json = await gw.run(['accounts', 'signups', '--json']);
    const [row] = (JSON.parse(json.stdout) as { data: Array<Record<string, unknown>> }).data;
    expect(row).toMatchObject({ email, trial_granted: true, verified_at: expect.any(Number) });
    const account = await gw.run(['accounts', 'show', String(row!.account_id)]);
    expect(account.stdout).toContain('"balance_usd":"40.44"');

    // The link is in the log too (written in batches: all of it by the exit), the password nowhere.
    await gw.stop();
    expect(gw.output).toContain(`"link":"${link}"`);
    expect(gw.output).toContain('mail written to the outbox');
    expect(gw.output).not.toContain('a demo password');
  });
});
