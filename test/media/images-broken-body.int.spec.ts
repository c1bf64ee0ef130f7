import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { callLog } from '../calls/support';
import { IMAGE_PRICE, startMediaHarness, type MediaHarness } from './support';

// Issue 23, finding 2: an answer the client never got is not billed. Issue 31, item 9 (the lead's
// decision): an image upstream whose body breaks off after its 200 status said it accepted the work, like
// any 2xx the gateway cannot read (docs/media.md, "Sent upstream once"), so it is not sent to another
// channel, which would generate, and have the operator pay for, the images twice: 502, nothing billed.

let h: MediaHarness;
beforeAll(async () => {
  h = await startMediaHarness({ imageTimings: { keepAliveAfterMs: 5000, keepAliveEveryMs: 1000, hopMs: 5000, ladderMs: 8000 } });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');

describe('an image answer whose body broke off after its 200', () => {
  it('is not resent to another channel: the client gets 502 upstream_unreachable, nothing billed, nothing held', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    h.sim.enqueue('cut_stream_after:1');
    const error = await openai.images.generate({ model: 'img-model', prompt: 'a cut answer', n: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const failed = error as InstanceType<typeof OpenAI.APIError>;
    expect(failed.status).toBe(502);
    expect(failed.code).toBe('upstream_unreachable');
    expect(failed.message).toMatch(/broke off after the 2xx status.*not sent to another channel/);
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-img-a']);
    await h.t.gateway.ledger.idle();
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.balance).toBe(GRANT);
    expect(wallet.held).toBe(0n);
    const rows = await callLog(h, accountId, key);
    expect(rows.map((r) => ({ status: r.status, error_code: r.error_code, cost: parseUsd(r.cost_usd) }))).toEqual([{ status: 'error', error_code: 'upstream_unreachable', cost: 0n }]);

    // A connection reset before any status still tries the next channel (nothing was accepted).
    h.sim.reset();
    h.sim.enqueue('reset_connection');
    const ok = await openai.images.generate({ model: 'img-model', prompt: 'a whole answer', n: 1 });
    expect(ok.data).toHaveLength(1);
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-img-a', 'key-img-b']);
    await h.t.gateway.ledger.idle();
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(GRANT - parseUsd(IMAGE_PRICE));
  });
});
