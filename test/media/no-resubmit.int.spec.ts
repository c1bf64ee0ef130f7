/**
 * A paid generation whose upstream took the request and did not answer in time is not sent to another
 * channel (issue 31, item 9: an async image task was sent upstream twice under load). The hop's time-out
 * used to try the next channel, which then generated, and the operator paid for, the same call again.
 * Failover stays for what says the work was not done: a 5xx or a failed connection.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { imagesConfig } from './support';
import { api, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

/** The images channels of `imagesConfig` and two video channels. */
function config(sim: Simulator): GatewayConfig {
  const images = imagesConfig(sim);
  return {
    models: [...images.models, mediaModel({ id: 'vid-flat', kind: 'video', price: { per_second: '0.15' } })],
    channels: [...images.channels, mediaChannel(sim, 'vid-a', 'videos', ['vid-flat'], 0), mediaChannel(sim, 'vid-b', 'videos', ['vid-flat'], 1)],
  };
}

/** A hop of 1 s within a ladder of 4 s: after a time-out there is time left for another channel. */
const TIMINGS = { keepAliveAfterMs: 60_000, keepAliveEveryMs: 10_000, hopMs: 1_000, ladderMs: 4_000 };

let h: SimulatedGateway;
let http: ReturnType<typeof api>;
beforeAll(async () => {
  h = await startTaskHarness(config, { imageTimings: TIMINGS, taskSubmitTimeoutMs: 1_000 });
  http = api(h);
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const channelsTried = (suffix: string) => h.sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith(suffix)).map((r) => r.path.split('/')[1]);

async function settled(accountId: string) {
  await h.t.gateway.tasks.idle();
  await h.t.gateway.ledger.idle();
  return h.t.gateway.ledger.wallet(accountId);
}

describe('a generation that timed out upstream is sent to no other channel', () => {
  it('an async image task: one upstream request, 504 upstream_timeout, refunded', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const before = await settled(accountId);
    h.sim.enqueueFor({ pathPrefix: '/img-a' }, 'slow_first_byte:2000');
    const submitted = await http.post('/v1/images/generations', key, { model: 'img-model', prompt: 'slow', async: true });
    expect(submitted.status).toBe(200);
    const task = (await submitted.json()) as { id: string };
    let final: Response;
    for (;;) {
      final = await http.get(`/v1/images/generations/${task.id}`, key);
      if (final.status !== 202) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(final.status).toBe(504);
    expect(((await final.json()) as { error: { code: string } }).error.code).toBe('upstream_timeout');
    expect(channelsTried('/v1/images/generations')).toEqual(['img-a']);
    await expect.poll(() => h.t.gateway.workflows.background.running(task.id)).toBe(false);
    expect(await settled(accountId)).toMatchObject({ balance: before.balance, held: 0n });
    const [row] = (await logRows(h, accountId)).filter((r) => r.task_id === task.id);
    expect(row).toMatchObject({ status: 'error', error_code: 'upstream_timeout', attempts_count: 1, cost_usd: '0.00' });
  });

  it('a synchronous image call: the same', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const before = await settled(accountId);
    h.sim.enqueueFor({ pathPrefix: '/img-a' }, 'slow_first_byte:2000');
    const response = await http.post('/v1/images/generations', key, { model: 'img-model', prompt: 'slow' });
    expect(response.status).toBe(504);
    expect(channelsTried('/v1/images/generations')).toEqual(['img-a']);
    expect(await settled(accountId)).toMatchObject({ balance: before.balance, held: 0n });
  });

  it('a video submission: one upstream task, 504, refunded, no task visible; a 5xx still tries the next channel', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const before = await settled(accountId);
    h.sim.enqueueFor({ pathPrefix: '/vid-a' }, 'slow_first_byte:2000');
    const response = await http.post('/v1/videos/generations', key, { model: 'vid-flat', content: [{ type: 'text', text: 'slow' }] });
    expect(response.status).toBe(504);
    expect(channelsTried('/api/v3/contents/generations/tasks')).toEqual(['vid-a']);
    expect(await settled(accountId)).toMatchObject({ balance: before.balance, held: 0n });
    expect(((await (await http.get('/v1/videos/generations', key)).json()) as { data: unknown[] }).data).toHaveLength(0);

    h.sim.reset();
    h.sim.enqueueFor({ pathPrefix: '/vid-a' }, 'http_503');
    const failedOver = await http.post('/v1/videos/generations', key, { model: 'vid-flat', content: [{ type: 'text', text: 'again' }] });
    expect(failedOver.status).toBe(200);
    expect(channelsTried('/api/v3/contents/generations/tasks')).toEqual(['vid-a', 'vid-b']);
  });
});

/**
 * Issue 31, item 9 (residual): a 2xx the gateway cannot read (not JSON, no task id) is an acceptance it
 * cannot use. It used to try the next channel too, which made (and had the operator pay for) the same
 * generation again; now the client gets 502 in its protocol's shape, the hold is released, and the
 * channel counts one failure, as for a failed connection.
 */
describe('a generation answered 2xx but unreadably is sent to no other channel', () => {
  it('a synchronous image call (openai SDK): 502 upstream_unreachable, img-b never called, refunded, one failure of img-a', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const before = await settled(accountId);
    const failuresBefore = h.t.gateway.channels.state('img-a').failures;
    h.sim.enqueueFor({ pathPrefix: '/img-a' }, 'garbage_body');
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const error = (await openai.images.generate({ model: 'img-model', prompt: 'garbled' }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(502);
    expect(error.error).toMatchObject({ code: 'upstream_unreachable', type: 'api_error', message: expect.stringMatching(/could not be read.*not sent to another channel/) });
    expect(channelsTried('/v1/images/generations')).toEqual(['img-a']);
    expect(await settled(accountId)).toMatchObject({ balance: before.balance, held: 0n });
    const rows = await logRows(h, accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'error', error_code: 'upstream_unreachable', attempts_count: 1, cost_usd: '0.00' });
    // The channel's health counts it as an upstream failure, as before.
    expect(h.t.gateway.channels.state('img-a')).toMatchObject({ failures: failuresBefore + 1, lastError: expect.stringMatching(/could not be read/) });
  });

  it('a video submission answered 200 without a readable task id: 502, vid-b never called, refunded, no task visible', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const before = await settled(accountId);
    h.sim.enqueueFor({ pathPrefix: '/vid-a' }, 'garbage_body');
    const response = await http.post('/v1/videos/generations', key, { model: 'vid-flat', content: [{ type: 'text', text: 'garbled' }] });
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('upstream_unreachable');
    expect(channelsTried('/api/v3/contents/generations/tasks')).toEqual(['vid-a']);
    expect(await settled(accountId)).toMatchObject({ balance: before.balance, held: 0n });
    expect(((await (await http.get('/v1/videos/generations', key)).json()) as { data: unknown[] }).data).toHaveLength(0);
    const [row] = await logRows(h, accountId);
    expect(row).toMatchObject({ status: 'error', error_code: 'upstream_unreachable', attempts_count: 1, cost_usd: '0.00' });
  });
});
