import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { IMAGE_PRICE, startMediaHarness, type MediaHarness } from './support';

// Issue 23, finding 2: an answer the client never got is not billed. An image upstream whose body
// breaks off after its 200 status is a failed attempt like a reset connection.

let h: MediaHarness;
beforeAll(async () => {
  h = await startMediaHarness({ imageTimings: { keepAliveAfterMs: 5000, keepAliveEveryMs: 1000, hopMs: 5000, ladderMs: 8000 } });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');

describe('an image answer whose body broke off after its 200', () => {
  it('is not billed: the next channel answers, or the client gets a 502 that costs nothing', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    h.sim.enqueue('cut_stream_after:1');
    const ok = await openai.images.generate({ model: 'img-model', prompt: 'a cut answer', n: 1 });
    expect(ok.data).toHaveLength(1);
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-img-a', 'key-img-b']);
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - parseUsd(IMAGE_PRICE));

    h.sim.reset();
    h.sim.enqueue('cut_stream_after:1', 'cut_stream_after:1');
    const error = await openai.images.generate({ model: 'img-model', prompt: 'cut twice', n: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    await h.t.gateway.ledger.idle();
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.balance).toBe(GRANT - parseUsd(IMAGE_PRICE));
    expect(wallet.held).toBe(0n);
  });
});
