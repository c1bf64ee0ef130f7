import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { createServer, connect, type Server, type Socket } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { chatConfig } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { postgresDatabase } from '../support/storage';
import { expectOutageAnswers } from './outage-answers';

// Issue 31, item 12: while the database cannot be reached, a request that needs it is answered 503
// with Retry-After in its protocol's own shape (the client's SDK retries it), not 500
// `internal_error`; once the database is back, the same requests succeed. The gateway reaches the
// suite's Postgres through a TCP proxy of this test's own, which the test stops (every connection
// cut, new ones refused) and starts again. Postgres only: embedded, the database is the process.

/** A TCP proxy to `target` on a fixed local port, which can be taken down (connections cut) and up. */
class Cable {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async to(target: { host: string; port: number }): Promise<Cable> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const cable = new Cable(port, target);
    await cable.up();
    return cable;
  }

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }

  /** The database is gone: open connections break, new ones are refused. */
  async down(): Promise<void> {
    const server = this.server!;
    this.server = null;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

function config(sim: Simulator): GatewayConfig {
  const chat = chatConfig(sim);
  return {
    ...chat,
    channels: [
      ...chat.channels,
      { id: 'img-a', protocol: 'images', base_url: `${sim.url}/img-a`, api_key: 'key-img-a', group: 'default', priority: 0, weight: 1, models: ['img-model'], tools: [] },
    ],
  };
}

describe.skipIf(!process.env.DATABASE_URL)('a database outage under the gateway (Postgres)', () => {
  let cable: Cable;
  let h: SimulatedGateway;
  let key: string;
  beforeAll(async () => {
    const real = new URL(process.env.DATABASE_URL!);
    cable = await Cable.to({ host: real.hostname, port: Number(real.port || 5432) });
    const proxied = new URL(real);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(cable.port);
    h = await startSimulatedGateway(config, { db: await postgresDatabase(proxied.toString()) });
    ({ key } = await h.t.accountWithKey());
  });
  afterAll(async () => {
    await h?.close();
  });

  const openai = () => new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
  const anthropic = () => new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
  const gemini = () => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } });
  const chat = () => openai().chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hello' }] });
  const message = () => anthropic().messages.create({ model: 'msg-model', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] });
  const generate = () => gemini().models.generateContent({ model: 'gem-model', contents: 'hello' });
  const image = () =>
    fetch(`${h.baseUrl}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'img-model', prompt: 'a lighthouse' }),
    });

  it('answers 503 with Retry-After in each protocol\'s shape while the database is away, and serves again once it is back', async () => {
    expect((await chat()).choices[0]!.message.content).toBeTruthy();
    // The cut connections drop every cache (Sql.onReset), and the key's freshness (1 s) is past:
    // each request needs the database from authentication on.
    await cable.down();
    await new Promise((r) => setTimeout(r, 1_100));

    await expectOutageAnswers({ chat, message, generate });

    const img = await image();
    expect(img.status).toBe(503);
    expect(img.headers.get('retry-after')).toBe('5');
    expect(await img.json()).toMatchObject({ error: { type: 'server_error', code: 'service_unavailable' } });

    const balance = await fetch(`${h.baseUrl}/v1/key/balance`, { headers: { 'x-api-key': key } });
    expect(balance.status).toBe(503);
    expect(balance.headers.get('retry-after')).toBe('5');

    await cable.up();
    expect((await chat()).choices[0]!.message.content).toBeTruthy();
    expect((await message()).content.length).toBeGreaterThan(0);
    expect((await generate()).text).toBeTruthy();
    expect((await image()).status).toBe(200);
  });
});
