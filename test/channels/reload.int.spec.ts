import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load';
import { startSimulator, type Simulator } from '../../src/simulator';
import { simulatorChannel } from '../support/channels';
import { startTestGateway, type TestGateway } from '../support/gateway';

const dir = mkdtempSync(join(tmpdir(), 'reload-'));
const file = join(dir, 'gateway.json');

/** The config file's text with the model's prices (USD per 1M tokens). */
const configText = (sim: Simulator, input: string, output: string) =>
  JSON.stringify({
    models: [{ id: 'live-model', kind: 'text', default_max_tokens: 100, price: { input, output } }],
    channels: [simulatorChannel(sim, 'live-a', 'chat-completions', ['live-model'])],
    channel_health: { probe_interval_s: 0 },
  });

let sim: Simulator;
let t: TestGateway;
let baseUrl: string;
let openai: OpenAI;
let accountId: string;
beforeAll(async () => {
  sim = await startSimulator();
  const text = configText(sim, '1.00', '2.00');
  writeFileSync(file, text);
  t = await startTestGateway({ config: parseConfig(text), env: { GATEWAY_CONFIG: file } });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
  const created = await t.accountWithKey();
  accountId = created.accountId;
  openai = new OpenAI({ apiKey: created.key, baseURL: `${baseUrl}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t.close();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What each settled call captured, by request id (nano-USD). */
async function captured(): Promise<bigint[]> {
  await t.gateway.ledger.idle();
  const events = await t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.filter((e) => e.type === 'HoldSettled').map((e) => BigInt((e.data as { captured: string }).captured));
}

describe('live configuration', () => {
  it('a reload during a running stream changes prices for new calls only, and is recorded with its digest', async () => {
    sim.enqueue('slow_stream:150');
    const stream = await openai.chat.completions.create({
      model: 'live-model',
      messages: [{ role: 'user', content: 'one two three four five six seven eight nine ten' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = stream[Symbol.asyncIterator]();
    const first = await chunks.next();
    expect(first.done).toBe(false);

    const newText = configText(sim, '10.00', '20.00');
    writeFileSync(file, newText);
    const reloaded = await t.admin('POST', '/config/reload');
    expect(reloaded.statusCode).toBe(200);
    const digest = createHash('sha256').update(newText).digest('hex');
    expect(reloaded.json()).toEqual({ applied: true, digest, path: file, channels: 1, models: 1 });

    let usage: OpenAI.CompletionUsage | undefined;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) usage = next.value.usage ?? usage;
    expect(usage).toBeDefined();
    // The call in flight keeps the price it started with: $1 / $2 per 1M tokens = 1000 / 2000 nano-USD a token.
    await expect.poll(async () => (await captured()).length).toBe(1);
    expect((await captured())[0]).toBe(BigInt(usage!.prompt_tokens) * 1000n + BigInt(usage!.completion_tokens) * 2000n);

    const after = await openai.chat.completions.create({ model: 'live-model', messages: [{ role: 'user', content: 'new price' }] });
    await expect.poll(async () => (await captured()).length).toBe(2);
    expect((await captured())[1]).toBe(BigInt(after.usage!.prompt_tokens) * 10_000n + BigInt(after.usage!.completion_tokens) * 20_000n);

    const recorded = await t.gateway.storage.store.readStream('gateway-config');
    expect(recorded.map((e) => [e.type, (e.data as { digest: string; trigger: string }).digest, (e.data as { trigger: string }).trigger])).toEqual([['ConfigApplied', digest, 'admin']]);
    const rows = await t.db.sql.query<{ digest: string }>('SELECT digest FROM config_changes');
    expect(rows).toEqual([{ digest }]);
  });

  it('a bad file is refused with every error and the running config stays', async () => {
    const before = (await t.admin('POST', '/config/reload')).json().digest as string;
    writeFileSync(
      file,
      JSON.stringify({
        models: [{ id: 'live-model', kind: 'text', price: { input: 1.5 } }],
        channels: [simulatorChannel(sim, 'live-a', 'chat-completions', ['live-model'], { base_url: 'not a url' })],
      }),
    );
    const refused = await t.admin('POST', '/config/reload');
    expect(refused.statusCode).toBe(400);
    const error = refused.json().error as { code: string; message: string };
    expect(error.code).toBe('invalid_config');
    expect(error.message).toMatch(/models\.0\.price\.input/);
    expect(error.message).toMatch(/channels\.0\.base_url/);
    // Still the last good config: its prices and the same digest on record.
    const catalogue = (await (await fetch(`${baseUrl}/api/v1/models/public?id=live-model`)).json()) as { models: Array<{ price: { input: string } }> };
    expect(catalogue.models[0]!.price.input).toBe('10.00');
    const recorded = await t.gateway.storage.store.readStream('gateway-config');
    expect((recorded.at(-1)!.data as { digest: string }).digest).toBe(before);
  });
});
