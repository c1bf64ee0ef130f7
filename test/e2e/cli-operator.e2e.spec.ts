import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
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
    const keys = JSON.parse((await gw.run(['keys', 'list', accountId, '--json'])).stdout) as { data: Array<{ expires_at: number | null; allowed_models: unknown }> };
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

// Issue 33, item 8: the CLI as a script and a person use it.
describe('the CLI itself', () => {
  it('--version prints the version alone', async () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    const version = await gw.run(['--version']);
    expect([version.code, version.stdout, version.stderr]).toEqual([0, `${pkg.version}\n`, '']);
  });

  it("a usage error: one line naming the problem, then that command's own usage, exit 2", async () => {
    const missing = await gw.run(['channels', 'disable']);
    expect(missing.code).toBe(2);
    const lines = missing.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe('gateway: missing ID');
    expect(lines[1]).toMatch(/^Usage: gateway channels disable ID\b/);
    expect(lines).toHaveLength(2);

    const typo = await gw.run(['accounts', 'limits', accountId, '--rmp', '5']);
    expect(typo.stderr.split('\n')[0]).toBe("gateway: Unknown option '--rmp'");
    expect(typo.stderr).not.toContain('accounts create');

    const unknown = await gw.run(['channels', 'zap']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.split('\n')[0]).toBe('gateway: unknown command "channels zap"');
    expect(unknown.stderr).toContain('gateway channels probe ID');
    expect(unknown.stderr.trimEnd().split('\n')).toHaveLength(5);
    noStack(unknown.stderr);
  });

  it('lists channels as a table, and as the API\'s JSON with --json', async () => {
    const listed = await gw.run(['channels', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    const [heading, ...rows] = listed.stdout.trimEnd().split('\n');
    expect(heading!.split(/\s{2,}/).slice(0, 6)).toEqual(['ID', 'PROTOCOL', 'GROUP', 'PRIORITY', 'STATUS', 'DISABLED_BY']);
    expect(rows.find((row) => row.startsWith('openai-chat '))).toMatch(/^openai-chat\s+chat-completions\s+default\s+0\s+healthy\s+-\s/);
    const json = await gw.run(['channels', 'list', '--json']);
    const channels = (JSON.parse(json.stdout) as { data: Array<{ id: string; status: string }> }).data;
    expect(channels.map((c) => c.id)).toEqual(rows.map((row) => row.split(/\s+/)[0]));
    // Other lists too: the accounts as a table.
    expect((await gw.run(['accounts', 'list'])).stdout).toMatch(/^ID\s+NAME\s+STATUS\s+BALANCE_USD/);
  });

  it('disables, enables and probes a channel; the admin API and /metrics agree', async () => {
    const status = async () => (JSON.parse((await gw.run(['channels', 'list', '--json'])).stdout) as { data: Array<{ id: string; status: string; disabled_by: string | null }> }).data.find((c) => c.id === 'openai-chat')!;
    const disabled = await gw.run(['channels', 'disable', 'openai-chat']);
    expect([disabled.code, disabled.stdout]).toEqual([0, 'openai-chat: disabled (operator)\n']);
    expect(await status()).toMatchObject({ status: 'disabled', disabled_by: 'operator' });
    const metrics = await (await fetch(`${gw.base}/metrics`)).text();
    expect(metrics).toContain('gateway_channel_status{channel="openai-chat",status="disabled",disabled_by="operator"} 1');

    const enabled = await gw.run(['channels', 'enable', 'openai-chat', '--json']);
    expect(JSON.parse(enabled.stdout)).toMatchObject({ id: 'openai-chat', status: 'healthy', disabled_by: null });
    const probed = await gw.run(['channels', 'probe', 'openai-chat']);
    expect([probed.code, probed.stdout]).toEqual([0, 'probe ok; openai-chat: healthy\n']);
  });

  it("a server's refusal: one readable line on stderr, its JSON with --json, exit 1", async () => {
    const missing = await gw.run(['channels', 'disable', 'nope']);
    expect([missing.code, missing.stdout]).toEqual([1, '']);
    expect(missing.stderr).toBe('gateway: HTTP 404 channel_not_found: no channel nope in the config in force\n');
    const json = await gw.run(['channels', 'disable', 'nope', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toEqual({ error: { code: 'channel_not_found', message: 'no channel nope in the config in force' } });
  });

  it('reloads the config', async () => {
    const reloaded = await gw.run(['config', 'reload']);
    expect(reloaded.code, reloaded.stderr).toBe(0);
    expect(reloaded.stdout).toMatch(/^config reloaded from \S+demo\.yaml: \d+ channels, \d+ models \(sha256 [0-9a-f]{64}\)\n$/);
    const json = JSON.parse((await gw.run(['config', 'reload', '--json'])).stdout) as { applied: boolean; digest: string };
    expect(json).toMatchObject({ applied: true, digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  it('loads only what a command needs: neither --help nor a client command imports the gateway', () => {
    // The bundle's static imports, followed through its chunks: what `--help` loads, then what a client
    // command adds (the chunk the bundle imports for it when it runs).
    const bundle = join(import.meta.dirname, '../../dist/gateway.mjs');
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const [, from, bare] of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)"|^import\s+"([^"]+)"/gm)) {
        const target = from ?? bare!;
        if (target.startsWith('./')) visit(resolve(dirname(file), target));
        else if (!target.startsWith('node:')) packages.add(target);
      }
    };
    visit(bundle);
    expect([...packages]).toEqual([]);
    const [, admin] = /import\("(\.\/chunks\/admin-commands-[^"]+)"\)/.exec(readFileSync(bundle, 'utf8'))!;
    visit(resolve(dirname(bundle), admin!));
    expect([...packages].filter((p) => /fastify|pglite|^pg$|prom-client|pino|undici|openai|zod/.test(p))).toEqual([]);
  });
});
