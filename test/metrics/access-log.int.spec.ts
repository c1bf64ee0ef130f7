import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChatHarness, type ChatHarness } from '../chat/support';

let h: ChatHarness;
let accountId: string;
let keyId: string;
let openai: OpenAI;

beforeAll(async () => {
  h = await startChatHarness({ chatTimeoutMs: 3000 });
  const made = await h.t.accountWithKey();
  accountId = made.accountId;
  keyId = made.keyId;
  openai = new OpenAI({ apiKey: made.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(() => h.close());

type Line = Record<string, unknown>;

/** The gateway's log lines about one request id. */
function linesOf(requestId: string): Line[] {
  return h.t.logs
    .join('')
    .split('\n')
    .filter((text) => text.includes(requestId))
    .map((text) => JSON.parse(text) as Line);
}
const accessLinesOf = (requestId: string) => linesOf(requestId).filter((line) => line.msg === 'access');

/** The call-log row of one request id, as the admin API shows it. */
async function rowOf(requestId: string): Promise<Line> {
  await h.t.gateway.runner.catchUpToHead();
  const { data } = (await h.t.admin('GET', `/accounts/${accountId}/logs?request_id=${requestId}`)).json() as { data: Line[] };
  expect(data).toHaveLength(1);
  return data[0]!;
}

/** Waits for what a stream's settlement writes after its last byte. */
async function eventually<T>(read: () => T, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const value = read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return read();
}

describe('the access log', () => {
  it('writes one line per call with its model, key, account, tokens, cost and latency, and no generic request lines', async () => {
    const { data, response } = await openai.chat.completions
      .create({ model: 'chat-model', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 16 })
      .withResponse();
    const requestId = response.headers.get('x-gateway-trace')!;
    expect(requestId).toMatch(/^req_/);
    const lines = linesOf(requestId);
    expect(lines.map((line) => line.msg)).toEqual(['access']);
    const [line] = lines;
    const row = await rowOf(requestId);
    expect(line).toMatchObject({
      level: 30,
      reqId: requestId,
      method: 'POST',
      url: '/v1/chat/completions',
      status: 200,
      account: accountId,
      key: keyId,
      model: 'chat-model',
      outcome: 'success',
      input_tokens: data.usage!.prompt_tokens,
      output_tokens: data.usage!.completion_tokens,
      cost_usd: row.cost_usd,
      channel: expect.any(String),
    });
    expect(line!.input_tokens).toBeGreaterThan(0);
    expect(typeof line!.latency_ms).toBe('number');
  });

  it('writes a stream\'s line once it is settled, with the tokens and cost of the whole stream', async () => {
    const { data: stream, response } = await openai.chat.completions
      .create({ model: 'chat-model', messages: [{ role: 'user', content: 'stream please' }], stream: true, stream_options: { include_usage: true } })
      .withResponse();
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    const requestId = response.headers.get('x-gateway-trace')!;
    const lines = await eventually(() => accessLinesOf(requestId), (found) => found.length > 0);
    expect(lines).toHaveLength(1);
    const row = await rowOf(requestId);
    expect(lines[0]).toMatchObject({
      status: 200,
      model: 'chat-model',
      outcome: 'success',
      output_tokens: usage!.completion_tokens,
      cost_usd: row.cost_usd,
    });
    expect(linesOf(requestId).filter((line) => line.msg !== 'access')).toEqual([]);
  });

  it('writes a refused call\'s line with its status and outcome, and a request without a key with no caller', async () => {
    const refused = await h.t.gateway.app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: `Bearer ${openai.apiKey}` },
      payload: { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] },
    });
    expect(refused.statusCode).toBe(400);
    const [refusedLine, ...more] = accessLinesOf(refused.headers['x-gateway-trace'] as string);
    expect(more).toEqual([]);
    expect(refusedLine).toMatchObject({ status: 400, account: accountId, key: keyId, outcome: 'rejected', error: 'model_not_found', cost_usd: '0.00' });

    const before = h.t.logs.length;
    const anonymous = await h.t.gateway.app.inject({ method: 'GET', url: '/v1/models' });
    expect(anonymous.statusCode).toBe(401);
    const written = h.t.logs.slice(before).map((text) => JSON.parse(text) as Line);
    const access = written.filter((line) => line.msg === 'access');
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({ method: 'GET', url: '/v1/models', status: 401 });
    expect(access[0]).not.toHaveProperty('account');
    expect(written.filter((line) => line.msg === 'incoming request' || line.msg === 'request completed')).toEqual([]);
  });
});
