import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildGateway } from '../support/child-gateway';

let gw: ChildGateway;
beforeAll(async () => {
  gw = await ChildGateway.prepare();
});
afterAll(() => gw.cleanup());

describe('the README path: serve, create an account and a key, read the balance; then operator commands', () => {
  it('works end to end through the CLI', { timeout: 180_000 }, async () => {
    const token = await gw.start();
    expect(token).toMatch(/^adm_[0-9a-f]{48}$/);

    const { accountId, key: raw } = await gw.accountWithKey('Newcomer');

    const balance = await fetch(`${gw.base}/v1/key/balance`, { headers: { 'x-api-key': raw } });
    expect(await balance.json()).toMatchObject({ object: 'key.balance', remaining_usd: '40.44' });

    // The demo catalogue answers out of the box, through the built-in simulator.
    const chat = await fetch(`${gw.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${raw}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello demo' }] }),
    });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe('Echo: hello demo');
    const after = (await (await fetch(`${gw.base}/v1/key/balance`, { headers: { 'x-api-key': raw } })).json()) as { used_usd: string };
    expect(Number(after.used_usd)).toBeGreaterThan(0);

    const badTopup = await gw.run(['accounts', 'topup', accountId, '100']);
    expect(badTopup.code).toBe(1);
    // A server's refusal: one readable line on stderr (issue 33), nothing on stdout.
    expect(badTopup.stdout).toBe('');
    expect(badTopup.stderr).toMatch(/^gateway: HTTP 400 topup_below_minimum: .+\n$/);
    expect((await gw.run(['accounts', 'topup', accountId, '134.80', '--reference', 'inv-1'])).code).toBe(0);

    // The web console: a sign-in link from the CLI opens a session (docs/console.md).
    const link = await gw.run(['accounts', 'login-link', accountId]);
    expect(link.code, link.stderr).toBe(0);
    const url = link.stdout.split('\n')[0]!;
    expect(url).toMatch(new RegExp(`^${gw.base}/console/sign-in#[A-Za-z0-9_-]{43}$`));
    const signIn = await fetch(`${gw.base}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: url.slice(url.indexOf('#') + 1) }),
      redirect: 'manual',
    });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const overview = await fetch(`${gw.base}/console/`, { headers: { cookie } });
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('Newcomer');

    // Finance: the demo call re-rated at a corrected price, first as a dry run, then applied once.
    const priceFile = join(mkdtempSync(join(tmpdir(), 'rerate-')), 'price.yaml');
    writeFileSync(priceFile, 'input: "1.50"\ncached_input: "0.75"\noutput: "6.00"\n');
    const rerate = ['ledger', 'rerate', '--model', 'gpt-4o-mini', '--from', '2020-01-01', '--to', '2100-01-01', '--price', priceFile];
    const dry = await gw.run(rerate);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(accountId);
    expect(dry.stdout).toContain('dry run');
    const applied = await gw.run([...rerate, '--apply', '--reference', 'price-fix-1']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('applied as adjustment price-fix-1');
    const repriced = (await (await fetch(`${gw.base}/v1/key/balance`, { headers: { 'x-api-key': raw } })).json()) as { used_usd: string };
    expect(Number(repriced.used_usd)).toBeGreaterThan(Number(after.used_usd));

    await gw.stop();
    // Embedded mode: the operator commands open the same database once the server is down.
    const verify = await gw.run(['ledger', 'verify']);
    expect(verify.code, verify.stderr + verify.stdout).toBe(0);
    expect(verify.stdout).toContain('ledger verified');
    const rebuild = await gw.run(['projections', 'rebuild']);
    expect(rebuild.code, rebuild.stderr).toBe(0);
    expect(rebuild.stdout).toMatch(/rebuilt accounts/);
    expect((await gw.run(['ledger', 'verify', '--account', accountId])).code).toBe(0);

    const unknown = await gw.run(['projections', 'rebuild', 'nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown projection');
  });
});
