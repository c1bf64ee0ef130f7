/**
 * The upload spool has a disk budget (issue 31, item 4): the files of multipart image edits in flight
 * (DATA_DIR/uploads) take at most UPLOAD_SPOOL_LIMIT_MB in all, one account at most half of it, counted as
 * the bytes are written. An upload that would pass it is refused with 503 `service_unavailable` and
 * Retry-After, its partial file deleted and its bytes given back; the wallet is not touched. Before,
 * concurrent 95 MB edits of one tenant or many could fill DATA_DIR.
 */
import { connect, type Socket } from 'node:net';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { IMAGE_PRICE, startMediaHarness, type MediaHarness } from '../media/support';
import { noneSpooled, spooledFiles } from './support';

const MiB = 1024 * 1024;
const GRANT = parseUsd('40.44');

let h: MediaHarness;
beforeAll(async () => {
  // 4 MB in all, 2 MB for one account.
  h = await startMediaHarness({ env: { UPLOAD_SPOOL_LIMIT_MB: '4' } });
});
afterAll(() => h.close());

const spooled = () => spooledFiles(h.t.dataDir);
const noSpooledFiles = () => noneSpooled(h.t.dataDir);

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
async function edit(key: string, size: number) {
  const image = await toFile(Buffer.alloc(size, 7), 'in.png', { type: 'image/png' });
  return client(key).images.edit({ model: 'img-model', prompt: 'make it blue', image, n: 1 });
}
async function refusal(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

/** An edit whose upload stops after `size` bytes of its file (the connection stays open): its bytes hold
 * their place in the spool until the socket is destroyed. */
async function pendingUpload(key: string, size: number): Promise<Socket> {
  const opening = '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nimg-model\r\n--b\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nslow\r\n--b\r\nContent-Disposition: form-data; name="image"; filename="slow.png"\r\nContent-Type: image/png\r\n\r\n';
  const head = ['POST /v1/images/edits HTTP/1.1', 'Host: gateway.test', `authorization: Bearer ${key}`, 'Content-Type: multipart/form-data; boundary=b', `Content-Length: ${opening.length + 20 * MiB}`].join('\r\n');
  const socket = connect(Number(new URL(h.baseUrl).port), '127.0.0.1');
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`${head}\r\n\r\n${opening}`);
  socket.write(Buffer.alloc(size, 9));
  return socket;
}

describe('the upload spool has a disk budget', () => {
  it("an upload past one account's share is refused with 503 and Retry-After; nothing stays on disk or in the wallet, and a small one then passes", async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const refused = await refusal(edit(key, 3 * MiB));
    expect(refused.status).toBe(503);
    expect(refused.code).toBe('service_unavailable');
    expect(refused.type).toBe('server_error');
    expect(refused.message).toMatch(/share of the gateway's upload space/);
    expect(Number(refused.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(h.sim.requests).toHaveLength(0);
    await noSpooledFiles();
    await h.t.gateway.ledger.idle();
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT, held: 0n });

    const ok = await edit(key, MiB);
    expect(ok.data).toHaveLength(1);
    await noSpooledFiles();
    await h.t.gateway.ledger.idle();
    expect(await h.t.gateway.ledger.wallet(accountId)).toMatchObject({ balance: GRANT - parseUsd(IMAGE_PRICE), held: 0n });
  });

  it('uploads of other accounts in flight take the space: the next one is refused until they are gone, then it passes', async () => {
    const [a, b, c] = [await h.t.accountWithKey(), await h.t.accountWithKey(), await h.t.accountWithKey()];
    const sockets = [await pendingUpload(a.key, 1.5 * MiB), await pendingUpload(b.key, 1.5 * MiB)];
    try {
      await vi.waitFor(() => expect(spooled().filter((f) => f.size >= 1.5 * MiB)).toHaveLength(2), { timeout: 10_000, interval: 20 });
      // 1.5 MB is within this account's share; 3 MB + 1.5 MB is past the spool's 4 MB.
      const refused = await refusal(edit(c.key, 1.5 * MiB));
      expect(refused.status).toBe(503);
      expect(refused.code).toBe('service_unavailable');
      expect(refused.message).toMatch(/upload space \(4 MB\) is taken/);
      expect(Number(refused.headers?.get('retry-after'))).toBeGreaterThan(0);
      await vi.waitFor(() => expect(spooled()).toHaveLength(2), { timeout: 5_000, interval: 20 });
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    await noSpooledFiles();
    expect((await edit(c.key, 1.5 * MiB)).data).toHaveLength(1);
    await noSpooledFiles();
    await h.t.gateway.ledger.idle();
    expect(await h.t.gateway.ledger.wallet(c.accountId)).toMatchObject({ balance: GRANT - parseUsd(IMAGE_PRICE), held: 0n });
    expect(h.sim.requests).toHaveLength(2);
  });
});
