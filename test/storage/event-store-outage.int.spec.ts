import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStoreUnreachableError, type EventStore } from '../../src/events/store/port';
import { chatConfig } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { expectOutageAnswers } from './outage-answers';

// Issue 31, item 12 (the event store's part): an event store of its own (EventStoreDB) that cannot be
// reached is answered as the database's outage is (test/storage/database-outage.int.spec.ts): 503
// `service_unavailable` with Retry-After in each protocol's shape, not 500 `internal_error`. Its
// adapter says so with the port's EventStoreUnreachableError (src/events/store/eventstoredb.ts, its
// unit spec drives it with the client's errors); here the gateway's store refuses its appends with
// that error, as the adapter does when the server is away, and the HTTP error mapping is what is under test.

describe('an event store that cannot be reached under the gateway', () => {
  let h: SimulatedGateway;
  let key: string;
  let store: { append: EventStore['append'] };
  let append: EventStore['append'];
  beforeAll(async () => {
    h = await startSimulatedGateway(chatConfig);
    ({ key } = await h.t.accountWithKey());
    store = h.t.gateway.storage.store;
    append = store.append;
  });
  afterAll(async () => {
    store.append = append;
    await h?.close();
  });

  /** The store as its adapter leaves it while the server is away: every append fails so. */
  const serverAway = () => {
    store.append = () =>
      Promise.reject(new EventStoreUnreachableError('eventstoredb', new Error('14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:2113')));
  };
  const serverBack = () => {
    store.append = append;
  };

  const openai = () => new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
  const anthropic = () => new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
  const gemini = () => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } });
  const chat = () => openai().chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hello' }] });
  const message = () => anthropic().messages.create({ model: 'msg-model', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] });
  const generate = () => gemini().models.generateContent({ model: 'gem-model', contents: 'hello' });

  it("answers 503 service_unavailable with Retry-After in each protocol's shape, and serves again once the store is back", async () => {
    expect((await chat()).choices[0]!.message.content).toBeTruthy();
    serverAway();
    try {
      await expectOutageAnswers({ chat, message, generate });

      // The admin API's own shape: creating an account appends its first events.
      const created = await h.t.admin('POST', '/accounts', { name: 'during the outage' });
      expect(created.statusCode).toBe(503);
      expect(created.headers['retry-after']).toBe('5');
      expect(created.json()).toMatchObject({ error: { code: 'service_unavailable' } });
    } finally {
      serverBack();
    }
    expect((await chat()).choices[0]!.message.content).toBeTruthy();
    expect((await message()).content.length).toBeGreaterThan(0);
    expect((await generate()).text).toBeTruthy();
  });
});
