import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/simulator';
import { startChatHarness, type ChatHarness } from './support';

// Issue 21, item 4: streams ignored back-pressure. A client that did not read made the gateway
// buffer the whole upstream answer (20 such clients: 1.16 GB, never given back), and billed each
// for output it never received.

let h: ChatHarness;
const accepted: Socket[] = [];
beforeAll(async () => {
  // The budget must leave a loaded machine time to start the large answer before the deadline.
  h = await startChatHarness({ chatTimeoutMs: 10_000 });
  h.t.gateway.app.server.on('connection', (socket: Socket) => accepted.push(socket));
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

interface Settled {
  captured: string;
  call: { status: string; error_code: string | null; output_tokens: number };
}

async function settlement(accountId: string): Promise<Settled | undefined> {
  await h.t.gateway.ledger.idle();
  const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.find((e) => e.type === 'HoldSettled')?.data as Settled | undefined;
}

/** The event that ended the account's first hold (a settlement, or a release). */
async function holdEnd(accountId: string): Promise<string | undefined> {
  await h.t.gateway.ledger.idle();
  const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.find((e) => e.type === 'HoldSettled' || e.type === 'HoldReleased')?.type;
}

/** About 17 MB of SSE: 100,000 tokens of text streamed a word per chunk. */
const LARGE = 100_000;

describe('a streamed answer and a client that does not read', () => {
  it('holds back the upstream instead of buffering the answer, ends the call at its deadline, and bills only what the socket accepted', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const port = (h.t.gateway.app.server.address() as { port: number }).port;
    const client = connect(port, '127.0.0.1');
    await once(client, 'connect');
    const body = JSON.stringify({ model: 'chat-model', stream: true, max_tokens: LARGE, messages: [{ role: 'user', content: `never read [[sim:reply_tokens:${LARGE}]]` }] });
    client.pause();
    client.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await expect.poll(() => accepted.find((s) => s.remotePort === client.localPort)).toBeDefined();
    const server = accepted.find((s) => s.remotePort === client.localPort)!;

    // What the gateway keeps in memory for this client: the socket's own buffer (the kernel's
    // buffers, a few MB on loopback, hold what the client's socket accepted).
    let buffered = 0;
    const sample = setInterval(() => (buffered = Math.max(buffered, server.writableLength)), 10);
    try {
      await expect.poll(() => holdEnd(accountId), { timeout: 60_000, interval: 100 }).toBe('HoldSettled');
      buffered = Math.max(buffered, server.writableLength);
    } finally {
      clearInterval(sample);
    }
    expect(buffered).toBeLessThan(1024 * 1024);

    // The call ended at its deadline with the connection closed; the output is billed on the share
    // of the answer the client's socket took, far from all of it.
    const settled = (await settlement(accountId))!;
    expect(settled.call).toMatchObject({ status: 'interrupted', error_code: 'client_timeout' });
    expect(settled.call.output_tokens).toBeLessThan(LARGE / 2);
    expect(server.destroyed).toBe(true);
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(0n);
    client.destroy();
  });

  it('delivers the whole answer to a client that reads slowly, and bills it in full', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const tokens = 20_000;
    const stream = await openai.chat.completions.create({
      model: 'chat-model',
      stream: true,
      max_tokens: tokens,
      messages: [{ role: 'user', content: `read slowly [[sim:reply_tokens:${tokens}]]` }],
    });
    let text = '';
    let paused = false;
    for await (const chunk of stream) {
      // Stop reading for a while: the gateway's socket fills and the relay waits for it to drain.
      if (!paused) await sleep(500);
      paused = true;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(countTokens(text)).toBe(tokens);
    await expect.poll(() => settlement(accountId)).toBeDefined();
    const settled = (await settlement(accountId))!;
    expect(settled.call).toMatchObject({ status: 'success', output_tokens: tokens });
  });
});
