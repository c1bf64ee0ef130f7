import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ChildGateway, freePort } from '../support/child-gateway';

// Issue 18, item 6. No Docker engine runs here, so the gateway is started the way the image
// starts it (the Dockerfile's CMD, in /app, with its NODE_ENV), and the image's health check and
// Prometheus' scrape of deploy/prometheus.yml are run against it. On Postgres when DATABASE_URL
// is set, with Redis when REDIS_URL is.

const ROOT = join(import.meta.dirname, '../..');
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

/** The JSON (exec form) arguments of the Dockerfile's CMD, or of its HEALTHCHECK's CMD. */
function execForm(instruction: 'CMD' | 'HEALTHCHECK'): string[] {
  const match = new RegExp(`^${instruction} (?:[^\\n]*\\\\\\n)*?[^\\n]*?(?:CMD )?(\\[.*\\])$`, 'm').exec(dockerfile);
  return JSON.parse(match![1]!) as string[];
}

/** The image's ENV, `NAME=value` pairs over continued lines. */
function imageEnv(): Record<string, string> {
  const block = /^ENV ((?:[^\n]*\\\n)*[^\n]*)$/m.exec(dockerfile)![1]!;
  return Object.fromEntries(block.split(/\s+\\?\s*/).filter(Boolean).map((pair) => pair.split('=') as [string, string]));
}

const job = (
  parse(readFileSync(join(ROOT, 'deploy/prometheus.yml'), 'utf8')) as {
    scrape_configs: Array<{ job_name: string; scheme?: string; metrics_path?: string; authorization?: { type?: string } }>;
  }
).scrape_configs.find((c) => c.job_name === 'gateway')!;

/** Runs a `node …` command as the container would (node is the image's node: this one). */
function run(command: string[], env: NodeJS.ProcessEnv): Promise<number | null> {
  expect(command[0]).toBe('node');
  return new Promise((resolve) => spawn(process.execPath, command.slice(1), { env, stdio: 'ignore' }).on('close', resolve));
}

const metricsToken = randomBytes(16).toString('hex');
let gw: ChildGateway;
let server: ChildProcess;
let port: string;

beforeAll(async () => {
  gw = await ChildGateway.prepare({ env: { METRICS_TOKEN: metricsToken } });
  port = gw.env.PORT!;
  const image = imageEnv();
  expect(image).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0' });
  // The image's environment, but on loopback, this test's port and its own DATA_DIR.
  const env = { ...gw.env, ...image, HOST: '127.0.0.1', PORT: port, DATA_DIR: gw.dataDir };
  const cmd = execForm('CMD');
  expect(cmd[0]).toBe('node');
  server = spawn(process.execPath, cmd.slice(1), { cwd: ROOT, env });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    server.stdout!.on('data', (d: Buffer) => {
      output += d;
      if (output.includes('gateway listening on')) resolve();
    });
    server.stderr!.on('data', (d: Buffer) => (output += d));
    server.on('exit', (code) => reject(new Error(`the image's CMD exited with ${code}:\n${output}`)));
  });
});

afterAll(async () => {
  if (server && server.exitCode === null && server.signalCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGKILL');
    await exited;
  }
  await gw?.cleanup();
});

describe('the gateway as the image runs it', () => {
  it("passes the image's health check; the check fails when nothing answers", async () => {
    const check = execForm('HEALTHCHECK');
    expect(await run(check, { ...process.env, PORT: port })).toBe(0);
    expect(await run(check, { ...process.env, PORT: String(await freePort()) })).toBe(1);
  });

  it("answers Prometheus' scrape of deploy/prometheus.yml with the token, 401 without", async () => {
    const url = `${job.scheme ?? 'http'}://127.0.0.1:${port}${job.metrics_path ?? '/metrics'}`;
    const scrape = await fetch(url, { headers: { authorization: `${job.authorization?.type ?? 'Bearer'} ${metricsToken}` } });
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await scrape.text()).toMatch(/^gateway_projection_parked_events\{projection="accounts"\} \d+$/m);
    expect((await fetch(url)).status).toBe(401);
  });

  it('exits 0 on the stop signal sent to the CMD process', async () => {
    const exited = new Promise<number | null>((r) => server.once('exit', (code) => r(code)));
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
