import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredHolds } from '../../src/jobs/hold-sweeper';
import { walletDecider } from '../../src/commands/wallet/decider';
import { available, type WalletState } from '../../src/commands/wallet/state';
import { decodeRecorded, walletStream, type WalletEvent } from '../../src/events/catalog';
import { createPostgresEventStore } from '../../src/events/store/postgres';
import { formatUsd } from '../../src/money/usd';
import { postgresSql, type Sql } from '../../src/storage/sql';
import { startSimulator, type Simulator } from '../../src/simulator';
import { chatConfig } from '../chat/support';
import { ChildGateway } from '../support/child-gateway';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { PrivatePostgres, postgresBinaries } from '../support/private-postgres';

// Two gateway instances on one Postgres under mixed load (chat calls streamed and not, balance
// reads, admin reads and top-ups) while the database is restarted (`pg_ctl restart -m fast`), crashed
// and restarted (`-m immediate`), and finally crashed and replaced by a standby that had stopped
// receiving 300 ms earlier (a failover that loses the last commits, as a crash loses the call
// metering of LEDGER_CALL_COMMIT=async, only more of it). One instance is `gateway serve` in a child
// process; the other runs in this process, on a clock the test can move, so that its hold sweeper can
// be run past every deadline. Afterwards: both alive and serving, each instance's view of every wallet
// equal to the log right after the failover and at the end, no hold open past its deadline, and
// `gateway ledger verify` clean.
//
// It owns its Postgres cluster, so it runs once, with the Postgres suite (DATABASE_URL set).

const ADMIN_TOKEN = 'test-admin-token';
const SECRET = 'ab'.repeat(32);
const BIN = join(import.meta.dirname, '../../bin/gateway.mjs');
const ACCOUNTS = 4;
const WORKERS = 8;

interface Account {
  readonly accountId: string;
  readonly keyId: string;
  readonly key: string;
}

describe.skipIf(!postgresBinaries || !process.env.DATABASE_URL)('the gateway through database restarts and a failover under load', () => {
  let cluster: PrivatePostgres;
  let sim: Simulator;
  let sql: Sql;
  let inProcess: TestGateway;
  let inProcessUrl: string;
  let child: ChildGateway;
  let clockOffset = 0;
  const dir = mkdtempSync(join(tmpdir(), 'gateway-soak-'));

  beforeAll(async () => {
    cluster = await PrivatePostgres.create();
    sim = await startSimulator();
    sql = postgresSql(cluster.url);
    inProcess = await startTestGateway({
      config: chatConfig(sim),
      db: { sql, label: 'postgres', another: () => sql, drop: async () => {} },
      now: () => Math.floor(Date.now() / 1000) + clockOffset,
    });
    await inProcess.gateway.app.listen({ port: 0, host: '127.0.0.1' });
    inProcessUrl = `http://127.0.0.1:${(inProcess.gateway.app.server.address() as { port: number }).port}`;
    // The same catalogue for the child (YAML takes JSON), the schema already made by the first instance.
    const configPath = join(dir, 'config.yaml');
    writeFileSync(configPath, JSON.stringify(chatConfig(sim)));
    child = await ChildGateway.prepare({
      databaseUrl: cluster.url,
      env: { GATEWAY_CONFIG: configPath, ADMIN_TOKEN, KEY_ENCRYPTION_SECRET: SECRET, LEDGER_CALL_COMMIT: 'async', REDIS_URL: '' },
    });
    await child.start();
    await cluster.addStandby();
  });

  afterAll(async () => {
    await child?.cleanup();
    await inProcess?.close();
    await sql?.close();
    await sim?.close();
    await cluster?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stays up, fails only with 5xx while the database is away, and ends with every view equal to the log', async () => {
    const accounts: Account[] = [];
    for (let i = 0; i < ACCOUNTS; i++) accounts.push(await inProcess.accountWithKey());
    const urls = [inProcessUrl, child.base];

    const statuses = new Map<string, number>();
    const count = (what: string) => statuses.set(what, (statuses.get(what) ?? 0) + 1);
    let phase = 'before';
    let chatsAfterFailover = 0;

    const admin = (base: string, method: string, path: string, body?: unknown) =>
      fetch(`${base}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });

    /** One request of the mix: chat calls (plain and streamed), key balance, admin reads, top-ups. */
    async function one(n: number) {
      const base = urls[n % urls.length]!;
      const account = accounts[Math.floor(n / urls.length) % accounts.length]!;
      const openai = new OpenAI({ apiKey: account.key, baseURL: `${base}/v1`, maxRetries: 0, timeout: 30_000 });
      const pick = n % 20;
      try {
        if (pick < 8) {
          await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: `call ${n}` }], max_tokens: 20 });
          count('chat 200');
          if (phase === 'after') chatsAfterFailover++;
        } else if (pick < 12) {
          const stream = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: `stream ${n}` }], max_tokens: 20, stream: true });
          for await (const chunk of stream) void chunk;
          count('stream 200');
        } else if (pick < 16) {
          const response = await fetch(`${base}/v1/key/balance`, { headers: { authorization: `Bearer ${account.key}` } });
          await response.text();
          count(`balance ${response.status}`);
        } else if (pick < 18) {
          const response = await admin(base, 'GET', `/accounts/${account.accountId}`);
          await response.text();
          count(`admin ${response.status}`);
        } else if (pick < 19) {
          const response = await admin(base, 'GET', `/accounts/${account.accountId}/keys`);
          await response.text();
          count(`keys ${response.status}`);
        } else {
          const response = await admin(base, 'POST', `/accounts/${account.accountId}/topups`, { amount_usd: '150', reference: `soak-${n}` });
          await response.text();
          count(`topup ${response.status}`);
        }
      } catch (error) {
        // The SDK throws on a non-2xx status (with the status) and on a dropped connection (without).
        const status = (error as { status?: number }).status;
        count(status !== undefined ? `chat ${status}` : `no answer: ${(error as Error).message}`);
      }
    }

    // Workers run the mix until told to stop; `held` makes them wait between requests.
    let stop = false;
    let held: Promise<void> | null = null;
    let inFlight = 0;
    let next = 0;
    const workers = Array.from({ length: WORKERS }, async () => {
      while (!stop) {
        if (held) await held;
        inFlight++;
        await one(next++).finally(() => inFlight--);
      }
    });
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

    /** Each instance's view of each wallet (admin view, key balance) against the log, read by a store of its own. */
    async function viewsEqualTheLog(sweptAt?: number) {
      const reader = postgresSql(cluster.url);
      try {
        const store = createPostgresEventStore(reader);
        for (const account of accounts) {
          const events = await store.readStream(walletStream(account.accountId));
          const log: WalletState = events.reduce((s, e) => walletDecider.evolve(s, decodeRecorded(e) as WalletEvent), walletDecider.initialState);
          if (sweptAt !== undefined) expect([...log.holds.values()].filter((hold) => hold.expiresAt <= sweptAt)).toEqual([]);
          const expected = { balance_usd: formatUsd(log.balance), held_usd: formatUsd(log.held), available_usd: formatUsd(available(log)) };
          const spent = formatUsd(log.keys.get(account.keyId)?.spent ?? 0n);
          for (const base of urls) {
            const view = (await (await admin(base, 'GET', `/accounts/${account.accountId}`)).json()) as Record<string, unknown>;
            expect(view, `${base} admin view of ${account.accountId}`).toMatchObject(expected);
            const balance = (await (await fetch(`${base}/v1/key/balance`, { headers: { authorization: `Bearer ${account.key}` } })).json()) as Record<string, unknown>;
            expect(balance, `${base} key balance of ${account.accountId}`).toMatchObject({ remaining_usd: expected.available_usd, used_usd: spent });
          }
        }
      } finally {
        await reader.close();
      }
    }

    await pause(1_500);
    phase = 'restart';
    await cluster.restart('fast');
    await pause(1_500);
    phase = 'crash';
    await cluster.restart('immediate');
    await pause(1_500);
    // The standby stops receiving; what both instances write (and cache) in the next 300 ms is not on
    // it. The load is held, and the server crashes: the standby takes its place.
    phase = 'failover';
    await cluster.cutStandby();
    await pause(300);
    let release!: () => void;
    held = new Promise((resolve) => (release = resolve));
    while (inFlight > 0) await pause(20);
    await inProcess.gateway.ledger.idle();
    await pause(300);
    await cluster.failover();
    // Before anything more is written: what each instance shows must be the log, without what was lost.
    await viewsEqualTheLog();
    phase = 'after';
    held = null;
    release();
    await pause(2_500);
    stop = true;
    await Promise.all(workers);

    const seen = Object.fromEntries([...statuses].sort());
    // Every answer is a success or a 5xx (the database away); a dropped connection is not an answer.
    for (const what of Object.keys(seen)) expect(what, JSON.stringify(seen)).toMatch(/ (200|201|5\d\d)$/);
    expect(child.alive, child.output).toBe(true);
    expect(chatsAfterFailover, JSON.stringify(seen)).toBeGreaterThan(0);
    for (const base of urls) expect((await fetch(`${base}/healthz`)).status).toBe(200);

    // Calls cut by the outages left holds open: move past every deadline and sweep (what the in-process
    // instance's chore does every 30 s) on a projection caught up with the log, until nothing is left.
    await inProcess.gateway.ledger.idle();
    await pause(300);
    clockOffset = 24 * 3600;
    const now = Math.floor(Date.now() / 1000) + clockOffset;
    await inProcess.gateway.runner.catchUpToHead();
    while ((await sweepExpiredHolds(sql, inProcess.gateway.ledger, now)) > 0) await inProcess.gateway.runner.catchUpToHead();
    await viewsEqualTheLog(now);

    // The projections against the log, by the operator's command.
    const verify = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const run = spawn(process.execPath, [BIN, 'ledger', 'verify'], { env: { ...child.env, DATA_DIR: join(dir, 'cli') } });
      let out = '';
      run.stdout.on('data', (d) => (out += d));
      run.stderr.on('data', (d) => (out += d));
      run.on('close', (code) => resolve({ code, out }));
    });
    expect(verify.out).toContain('ledger verified');
    expect(verify.code).toBe(0);
    // The child's log names no crash.
    expect(child.output).not.toMatch(/Unhandled 'error' event|uncaught/i);
  });
});
