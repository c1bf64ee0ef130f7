import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallSignal, classify, upstreamTarget } from '../../src/upstream/upstream-call';

// The call's budget and the client's disconnect reach undici through CallSignal, an EventEmitter
// signal (cheaper per call than an AbortController); an image hop's signal follows its ladder's.

let server: Server;
let url = '';
beforeAll(async () => {
  server = createServer(() => {
    /* never answers */
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('CallSignal', () => {
  it('ends an undici request when its budget runs out, as a time-out', async () => {
    const signal = new CallSignal(50);
    const error = await request(url, { signal: signal.signal }).catch((e: unknown) => e);
    signal.clear();
    expect(signal.expired).toBe(true);
    expect(classify(error, signal)).toMatchObject({ kind: 'timeout' });
  });

  it('ends an undici request when the client goes away, not as a time-out', async () => {
    const signal = new CallSignal(60_000);
    const pending = request(url, { signal: signal.signal }).catch((e: unknown) => e);
    setTimeout(() => signal.abort(), 20);
    const error = await pending;
    signal.clear();
    expect(signal.expired).toBe(false);
    expect(error).toBeInstanceOf(Error);
    expect(classify(error, signal).kind).toBe('unreachable');
  });

  it('a hop follows its ladder: the ladder running out ends the hop, a cleared hop no longer listens', () => {
    const ladder = new CallSignal(60_000);
    const hop = new CallSignal(60_000, ladder);
    const done = new CallSignal(60_000, ladder);
    done.clear();
    expect(ladder.listenerCount('abort')).toBe(1);
    ladder.abort(new DOMException('budget', 'TimeoutError'));
    expect(hop.aborted).toBe(true);
    expect((hop.reason as DOMException).name).toBe('TimeoutError');
    expect(done.aborted).toBe(false);
    hop.clear();
    ladder.clear();
    // A hop started after its ladder was aborted is aborted from the start.
    const late = new CallSignal(60_000, ladder);
    expect(late.aborted).toBe(true);
    late.clear();
  });
});

describe('upstreamTarget', () => {
  it('splits a channel base URL into origin and path prefix, with or without a prefix or trailing slashes', () => {
    expect(upstreamTarget('http://127.0.0.1:9001', '/v1/chat/completions')).toEqual({ origin: 'http://127.0.0.1:9001', path: '/v1/chat/completions' });
    expect(upstreamTarget('http://127.0.0.1:9001/', '/v1/messages')).toEqual({ origin: 'http://127.0.0.1:9001', path: '/v1/messages' });
    expect(upstreamTarget('https://api.example.com/proxy/openai//', '/v1/responses')).toEqual({ origin: 'https://api.example.com', path: '/proxy/openai/v1/responses' });
  });
});
