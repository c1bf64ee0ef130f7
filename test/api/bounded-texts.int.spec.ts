import { createServer, type Server } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load';
import type { GatewayConfig } from '../../src/config/schema';
import { walletStream, type CallRecord } from '../../src/events/catalog';
import { CALL_TEXT_LIMITS } from '../../src/projections/call-log/bounds';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { rejectedCall } from '../support/call-record';

// Issue 21, item 6: a client (or an upstream) decides texts that every call writes twice, into its
// event and its call-log row. Each is bounded; names an operator chooses are refused past theirs.

const HUGE_UPSTREAM_MESSAGE = 'upstream says no. '.repeat(20_000);

let t: TestGateway;
let upstream: Server;
let base: string;

function config(upstreamUrl: string): GatewayConfig {
  const demo = loadConfig(undefined).config;
  return {
    ...demo,
    models: [
      ...demo.models,
      {
        id: 'wordy-model',
        owned_by: 'test',
        kind: 'text',
        aliases: [],
        callable: true,
        endpoint_type: null,
        default_max_tokens: 100,
        capabilities: [],
        price: { input: '1.00', output: '2.00' },
      } as GatewayConfig['models'][number],
    ],
    channels: [
      ...demo.channels,
      {
        id: 'wordy',
        protocol: 'chat-completions',
        base_url: upstreamUrl,
        api_key: 'k',
        group: 'default',
        priority: 0,
        weight: 1,
        models: { 'wordy-model': 'wordy-model' },
        tools: [],
      } as GatewayConfig['channels'][number],
    ],
  };
}

beforeAll(async () => {
  // An upstream that refuses every call with a very long message (rule 5 passes it through).
  upstream = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: HUGE_UPSTREAM_MESSAGE, type: 'invalid_request_error', code: null } }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t = await startTestGateway({ config: config(`http://127.0.0.1:${(upstream.address() as { port: number }).port}`) });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await t.close();
  await new Promise((resolve) => upstream.close(resolve));
});

async function callRecords(accountId: string): Promise<CallRecord[]> {
  // A rejected call's record is queued as the answer leaves, not awaited.
  await t.gateway.ledger.idle();
  const events = await t.gateway.storage.store.readStream(walletStream(accountId));
  return events.flatMap((e) => {
    const data = e.data as { call?: CallRecord };
    return data.call ? [data.call] : [];
  });
}

async function logRows(accountId: string) {
  await t.gateway.ledger.idle();
  await t.gateway.runner.catchUpToHead();
  const page = await t.admin('GET', `/accounts/${accountId}/logs`);
  expect(page.statusCode).toBe(200);
  return page.json().data as Array<{ model: string; error_message: string | null; status: string }>;
}

describe('texts a call record keeps are bounded', () => {
  it('a rejected call naming a 1.5 MB model stores at most 256 characters of it, in the event and the row', async () => {
    const { accountId, key } = await t.accountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
    const model = `m${'x'.repeat(1_500_000)}`;
    const error = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('model_not_found');
    // The answer quotes the name within the same bound.
    expect((error as Error).message.length).toBeLessThan(1000);

    const [record] = await callRecords(accountId);
    expect(record!.status).toBe('rejected');
    expect(record!.model.length).toBeLessThanOrEqual(CALL_TEXT_LIMITS.model);
    expect(record!.model.startsWith('mxxx')).toBe(true);
    expect(record!.model.endsWith('…')).toBe(true);
    expect(record!.error_message!.length).toBeLessThanOrEqual(CALL_TEXT_LIMITS.error_message);
    const events = await t.gateway.storage.store.readStream(walletStream(accountId));
    expect(JSON.stringify(events.map((e) => e.data)).length).toBeLessThan(10_000);

    const [row] = await logRows(accountId);
    expect(row!.model).toBe(record!.model);
  });

  it("an upstream's long error message is cut in the record, not in the answer", async () => {
    const { accountId, key } = await t.accountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
    const error = await openai.chat.completions.create({ model: 'wordy-model', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain(HUGE_UPSTREAM_MESSAGE.trim());

    const [record] = await callRecords(accountId);
    expect(record!.status).toBe('error');
    expect(record!.error_message!.length).toBe(CALL_TEXT_LIMITS.error_message);
    expect(record!.error_message!.endsWith('…')).toBe(true);
    const [row] = await logRows(accountId);
    expect(row!.error_message).toBe(record!.error_message);
  });

  it('a record written unbounded (an older event) still makes a bounded row', async () => {
    const { accountId } = await t.accountWithKey();
    const call = rejectedCall({
      request_id: 'req_legacy',
      model: `\u{1F600}${'y'.repeat(300_000)}`,
      error_code: 'model_not_found',
      error_message: 'z'.repeat(300_000),
      submitted_at: Math.floor(Date.now() / 1000),
      result_urls: Array.from({ length: 100 }, (_, i) => `https://media.example/${i}/${'u'.repeat(10_000)}`),
    });
    expect((await t.gateway.ledger.recordRejected(accountId, call)).ok).toBe(true);
    const [row] = await logRows(accountId);
    expect(row!.model.length).toBeLessThanOrEqual(CALL_TEXT_LIMITS.model);
    expect(row!.model.startsWith('\u{1F600}yy')).toBe(true);
    expect(row!.error_message!.length).toBeLessThanOrEqual(CALL_TEXT_LIMITS.error_message);
    const urls = (row as unknown as { result_urls: string[] }).result_urls;
    expect(urls).toHaveLength(CALL_TEXT_LIMITS.result_urls);
    for (const url of urls) expect(url.length).toBeLessThanOrEqual(CALL_TEXT_LIMITS.result_url);
    const csv = await t.admin('GET', `/accounts/${accountId}/logs.csv`);
    expect(csv.body.length).toBeLessThan(100_000);
  });
});

describe('names and lists of the admin API are bounded', () => {
  it('refuses account and key names over 200 characters, and allow-lists over 1,000 ids', async () => {
    expect((await t.admin('POST', '/accounts', { name: 'a'.repeat(201) })).statusCode).toBe(400);
    const { accountId } = await t.accountWithKey();
    expect((await t.admin('POST', `/accounts/${accountId}/keys`, { name: 'k'.repeat(201) })).statusCode).toBe(400);
    const many = await t.admin('POST', `/accounts/${accountId}/keys`, { name: 'k', allowed_models: Array.from({ length: 1001 }, () => 'gpt-4o-mini') });
    expect(many.statusCode).toBe(400);
    const unknown = await t.admin('POST', `/accounts/${accountId}/keys`, { name: 'k', allowed_models: ['n'.repeat(100_000)] });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body.length).toBeLessThan(3000);
    expect((await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '200', reference: 'r'.repeat(201) })).statusCode).toBe(400);
  });

  it('pages the key list with a cursor', async () => {
    const { accountId } = await t.accountWithKey();
    for (const name of ['two', 'three', 'four']) expect((await t.admin('POST', `/accounts/${accountId}/keys`, { name })).statusCode).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await t.admin('GET', `/accounts/${accountId}/keys?limit=3${cursor ? `&after=${cursor}` : ''}`);
      expect(page.statusCode).toBe(200);
      const body = page.json() as { data: Array<{ name: string }>; next_cursor: string | null };
      expect(body.data.length).toBeLessThanOrEqual(3);
      seen.push(...body.data.map((k) => k.name));
      cursor = body.next_cursor;
    } while (cursor);
    // Keys created within one second are ordered by id: compare as sets.
    expect(seen.sort()).toEqual(['four', 'test key', 'three', 'two']);
    expect((await t.admin('GET', `/accounts/${accountId}/keys?after=nonsense`)).statusCode).toBe(400);
  });
});
