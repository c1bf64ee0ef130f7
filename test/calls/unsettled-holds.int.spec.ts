import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatConfig } from '../chat/support';
import { imagesConfig } from '../media/support';
import type { GatewayConfig } from '../../src/config/schema';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

// Issue 21, item 10: a call on which the gateway itself throws after the reservation must not leave
// its hold open until the sweeper (about 7 minutes), nor go without a call-log row.

/** An upstream that answers every chat call with a usage block the gateway cannot price (1.5 tokens). */
function oddUpstream(): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id: 'chatcmpl-odd',
          object: 'chat.completion',
          created: 1,
          model: 'chat-model-upstream',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1.5, completion_tokens: 2, total_tokens: 3.5 },
        }),
      );
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
}

let h: SimulatedGateway;
let odd: { server: Server; url: string };
beforeAll(async () => {
  odd = await oddUpstream();
  h = await startSimulatedGateway((sim): GatewayConfig => {
    const chat = chatConfig(sim);
    const images = imagesConfig(sim);
    return {
      models: [...chat.models.filter((m) => m.id !== 'img-model'), ...images.models.filter((m) => m.kind === 'image')],
      channels: [
        ...chat.channels.map((c) => (c.id === 'cc-a' ? { ...c, base_url: odd.url } : c)),
        ...images.channels.filter((c) => c.protocol === 'images'),
      ],
    };
  });
});
afterAll(async () => {
  await h.close();
  await new Promise((r) => odd.server.close(r));
});

/** JSON text with a value nested `depth` arrays deep where the body has the string "DEEP". */
const nested = (body: object, depth: number) => JSON.stringify(body).replace('"DEEP"', '['.repeat(depth) + ']'.repeat(depth));

async function rowsOf(accountId: string) {
  await h.t.gateway.runner.catchUpToHead();
  return h.t.db.sql.query<{ request_id: string; status: string; error_code: string | null; cost: string }>(
    'SELECT request_id, status, error_code, cost::text AS cost FROM call_log WHERE account_id = $1',
    [accountId],
  );
}

describe('a call the gateway fails after its reservation', () => {
  it('image: a body the gateway cannot forward releases the hold at once, with an error row, nothing billed', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const response = await fetch(`${h.baseUrl}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      // A pass-through field nested deeper than the upstream body's serialisation can go.
      body: nested({ model: 'img-model', prompt: 'a boat', extra: 'DEEP' }, 20_000),
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    const trace = response.headers.get('x-gateway-trace');
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.holds.size).toBe(0);
    expect(wallet.captured).toBe(0n);
    const rows = await rowsOf(accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ request_id: trace, cost: '0' });
    expect(['error', 'rejected']).toContain(rows[0]!.status);
  });

  it('chat: an answer the gateway cannot settle releases the hold at once, with its row', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const response = await fetch(`${h.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await response.text();
    // The settlement (or the release) is queued as the answer leaves: the next wallet read has it.
    await h.t.gateway.ledger.idle();
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.holds.size).toBe(0);
    expect(await rowsOf(accountId)).toHaveLength(1);
  });
});
