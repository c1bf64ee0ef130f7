import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '../../bin/gateway.mjs');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let dataDir: string;
let env: NodeJS.ProcessEnv;
let server: ChildProcess | null = null;
let database: string | null = null;
let base: string;

async function startServer(): Promise<string> {
  const child = spawn(process.execPath, [BIN, 'serve'], { env });
  server = child;
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
    const onData = (d: Buffer) => {
      output += d;
      const token = /admin token: (\S+)/.exec(output);
      if (token) {
        clearTimeout(timer);
        resolve(token[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (output += d));
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
}

async function stopServer() {
  if (!server) return;
  const exited = new Promise((r) => server!.once('exit', r));
  server.kill('SIGTERM');
  await exited;
  server = null;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'gateway-e2e-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // The demo config's simulator gets its own port, so parallel test files do not share one.
  const simulatorPort = await freePort();
  env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', SIMULATOR_URL: `http://127.0.0.1:${simulatorPort}` };
  delete env.ADMIN_TOKEN;
  delete env.EVENTSTORE_URL;
  delete env.GATEWAY_CONFIG;
  if (process.env.DATABASE_URL) {
    database = `gw_e2e_${randomBytes(4).toString('hex')}`;
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    await client.query(`CREATE DATABASE ${database}`);
    await client.end();
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = `/${database}`;
    env.DATABASE_URL = url.toString();
  }
});

afterAll(async () => {
  await stopServer();
  rmSync(dataDir, { recursive: true, force: true });
  if (database) {
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await client.end();
  }
});

describe('the README path: serve, create an account and a key, read the balance; then operator commands', () => {
  it('works end to end through the CLI', async () => {
    const token = await startServer();
    expect(token).toMatch(/^adm_[0-9a-f]{48}$/);

    const account = await run(['accounts', 'create', 'Newcomer'], env);
    expect(account.code, account.stderr).toBe(0);
    const accountId = JSON.parse(account.stdout).id as string;
    const key = await run(['keys', 'create', accountId, '--name', 'laptop'], env);
    expect(key.code, key.stderr).toBe(0);
    const raw = JSON.parse(key.stdout).key as string;

    const balance = await fetch(`${base}/v1/key/balance`, { headers: { 'x-api-key': raw } });
    expect(await balance.json()).toMatchObject({ object: 'key.balance', remaining_usd: '40.44' });

    // The demo catalogue answers out of the box, through the built-in simulator.
    const chat = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${raw}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello demo' }] }),
    });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe('Echo: hello demo');
    const after = (await (await fetch(`${base}/v1/key/balance`, { headers: { 'x-api-key': raw } })).json()) as { used_usd: string };
    expect(Number(after.used_usd)).toBeGreaterThan(0);

    const badTopup = await run(['accounts', 'topup', accountId, '100'], env);
    expect(badTopup.code).toBe(1);
    expect(badTopup.stdout).toContain('topup_below_minimum');
    expect((await run(['accounts', 'topup', accountId, '134.80', '--reference', 'inv-1'], env)).code).toBe(0);

    await stopServer();
    // Embedded mode: the operator commands open the same database once the server is down.
    const verify = await run(['ledger', 'verify'], env);
    expect(verify.code, verify.stderr + verify.stdout).toBe(0);
    expect(verify.stdout).toContain('ledger verified');
    const rebuild = await run(['projections', 'rebuild'], env);
    expect(rebuild.code, rebuild.stderr).toBe(0);
    expect(rebuild.stdout).toMatch(/rebuilt accounts/);
    expect((await run(['ledger', 'verify', '--account', accountId], env)).code).toBe(0);

    const unknown = await run(['projections', 'rebuild', 'nope'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown projection');
  });
});
