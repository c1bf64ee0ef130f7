import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChildGateway } from '../support/child-gateway';

const BIN = join(import.meta.dirname, '../../bin/gateway.mjs');

/** `gateway projections run` with the gateway's environment; resolves once it says it is applying the log. */
function startWorker(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [BIN, 'projections', 'run'], { env });
  let output = '';
  child.stderr!.on('data', (d) => (output += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the worker did not start:\n${output}`)), 60_000);
    child.stdout!.on('data', (d) => {
      output += d;
      if (output.includes('applying the log')) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    });
    child.on('exit', (code) => reject(new Error(`the worker exited with ${code}:\n${output}`)));
  });
}

const prepared: ChildGateway[] = [];
afterAll(async () => {
  for (const gw of prepared) await gw.cleanup();
});

describe('PROJECTIONS=external with a `gateway projections run` worker', () => {
  it.skipIf(!process.env.DATABASE_URL)(
    'serves calls and admin commands while the worker keeps the read models, and the worker stops on SIGTERM',
    { timeout: 180_000 },
    async () => {
      const gw = await ChildGateway.prepare({ env: { PROJECTIONS: 'external' } });
      prepared.push(gw);
      const token = await gw.start();
      const worker = await startWorker(gw.env);
      try {
        // Each admin command answers once the views include it: the worker applied it, not the gateway.
        const { accountId, key: raw } = await gw.accountWithKey('Worker-kept');
        const chat = await fetch(`${gw.base}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${raw}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'kept apart' }] }),
        });
        expect(chat.status).toBe(200);
        // The call's row in the call log, written by the worker.
        let logged = 0;
        for (let i = 0; i < 100 && logged === 0; i++) {
          const logs = await fetch(`${gw.base}/admin/v1/accounts/${accountId}/logs`, { headers: { authorization: `Bearer ${token}` } });
          logged = ((await logs.json()) as { data: unknown[] }).data.length;
          if (!logged) await new Promise((r) => setTimeout(r, 100));
        }
        expect(logged).toBe(1);
        const status = await gw.run(['projections', 'status']);
        expect(status.stdout).toMatch(/^ledger\tcommit=\d+/m);
      } finally {
        const exited = new Promise<number | null>((r) => worker.child.once('exit', (code) => r(code)));
        worker.child.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(worker.output()).toContain('SIGTERM: stopping after the batch in hand');
        await gw.stop();
      }
    },
  );

  it('needs DATABASE_URL, for the gateway and for the worker', { timeout: 60_000 }, async () => {
    const gw = await ChildGateway.prepare();
    prepared.push(gw);
    const { DATABASE_URL: _unset, ...embedded } = gw.env;
    const serve = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'serve'], { env: { ...embedded, PROJECTIONS: 'external' } });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      child.on('close', (code) => resolve({ code, output }));
    });
    expect(serve.code).toBe(1);
    expect(serve.output).toContain('PROJECTIONS=external needs DATABASE_URL');
    const worker = await gw.run(['projections', 'run'], { DATABASE_URL: '' });
    expect(worker.code).not.toBe(0);
    expect(worker.stderr + worker.stdout).toContain('projections run needs DATABASE_URL');
    const wrong = await gw.run(['projections', 'status'], { PROJECTIONS: 'elsewhere' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('PROJECTIONS must be "in-process" or "external"');
  });
});
