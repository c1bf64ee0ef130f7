import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildGateway } from '../support/child-gateway';

// Issue 21, item 18: what an operator types, and what the gateway prints at start.

let gw: ChildGateway;
let token: string;
let accountId: string;
let keyId: string;
beforeAll(async () => {
  gw = await ChildGateway.prepare();
  token = await gw.start();
  const account = await gw.run(['accounts', 'create', 'Operator Co']);
  accountId = JSON.parse(account.stdout).id as string;
  const key = await gw.run(['keys', 'create', accountId, '--name', 'k', '--expires-at', '4000000000']);
  keyId = JSON.parse(key.stdout).id as string;
});
afterAll(() => gw.cleanup());

const show = async () => JSON.parse((await gw.run(['accounts', 'show', accountId])).stdout) as { limits: { rpm: number | null; concurrency: number | null } };
const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at /);

describe('the admin token at start', () => {
  it('is printed when generated, and not at a later start', async () => {
    expect(gw.output).toContain(`admin token: ${token} (generated; saved in`);
    await gw.stop();
    expect(await gw.start()).toBe(token);
    expect(gw.output).toMatch(/admin token: saved in .*admin-token \(not printed\)/);
    expect(gw.output).not.toContain(token);
  });

  it('is not printed when it comes from ADMIN_TOKEN', async () => {
    await gw.stop();
    gw.env.ADMIN_TOKEN = 'adm_from_the_environment';
    await gw.start();
    expect(gw.output).toContain('admin token: from ADMIN_TOKEN (not printed)');
    expect(gw.output).not.toContain('adm_from_the_environment');
  });
});

describe('CLI values', () => {
  it('refuses limits that are not numbers instead of clearing them', async () => {
    expect((await gw.run(['accounts', 'limits', accountId, '--rpm', '60', '--concurrency', '4'])).code).toBe(0);
    const bad = await gw.run(['accounts', 'limits', accountId, '--rpm', 'sixty']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--rpm takes a whole number or "none", not "sixty"');
    expect((await show()).limits).toEqual({ rpm: 60, concurrency: 4 });
  });

  it('changes only the limit it names', async () => {
    expect((await gw.run(['accounts', 'limits', accountId, '--rpm', '120'])).code).toBe(0);
    expect((await show()).limits).toEqual({ rpm: 120, concurrency: 4 });
    expect((await gw.run(['accounts', 'limits', accountId, '--concurrency', 'none'])).code).toBe(0);
    expect((await show()).limits).toEqual({ rpm: 120, concurrency: null });
    expect((await gw.run(['accounts', 'limits', accountId])).code).toBe(2);
  });

  it('refuses an expiry or a spend cap that is not a number instead of clearing it', async () => {
    const expiry = await gw.run(['keys', 'update', keyId, '--expires-at', 'tomorrow']);
    expect(expiry.code).toBe(2);
    expect(expiry.stderr).toContain('--expires-at takes a whole number or "never"');
    const cap = await gw.run(['keys', 'update', keyId, '--spend-cap', 'lots']);
    expect(cap.code).toBe(1);
    const models = await gw.run(['keys', 'update', keyId, '--models', '']);
    expect(models.code).toBe(2);
    const keys = JSON.parse((await gw.run(['keys', 'list', accountId])).stdout) as { data: Array<{ expires_at: number | null; allowed_models: unknown }> };
    expect(keys.data[0]).toMatchObject({ expires_at: 4_000_000_000, allowed_models: null });
  });

  it('binds and unbinds channel groups: the account with `accounts group`, a key with `--group` (none: unbind)', async () => {
    // Each command prints the account or key as the admin API answers it.
    const group = async (args: string[]) => (JSON.parse((await gw.run(args)).stdout) as { group: string | null }).group;
    expect(await group(['accounts', 'group', accountId, 'premium'])).toBe('premium');
    expect(await group(['accounts', 'group', accountId, 'none'])).toBeNull();
    expect((await gw.run(['accounts', 'group', accountId])).code).toBe(2);
    expect(await group(['keys', 'update', keyId, '--group', 'default'])).toBe('default');
    expect(await group(['keys', 'update', keyId, '--group', 'none'])).toBeNull();
    expect(await group(['accounts', 'create', 'Grouped Co', '--group', 'premium'])).toBe('premium');
  }, 120_000);

  it('answers a mistyped flag with the usage, not a stack trace', async () => {
    const typo = await gw.run(['accounts', 'limits', accountId, '--rmp', '5']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("Unknown option '--rmp'");
    expect(typo.stderr).toContain('Usage: gateway');
    noStack(typo.stderr);
  });

  it('fails with a clear message on a PORT that is not a port', async () => {
    const result = await gw.run(['accounts', 'list'], { PORT: '80a' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('PORT must be a port number from 1 to 65535, not "80a"');
    noStack(result.stderr);
  });
});
