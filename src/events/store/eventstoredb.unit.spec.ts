import { createServer } from 'node:net';
import {
  AccessDeniedError,
  CancelledError,
  DeadlineExceededError,
  EventStoreDBClient,
  NotLeaderError,
  TimeoutError,
  UnavailableError,
  type AppendResult as ClientAppendResult,
} from '@eventstore/db-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { databaseUnreachable } from '../../storage/outage';
import { createEventStoreDbStore } from './eventstoredb';
import { ConcurrencyError, EventStoreUnreachableError, type NewEvent } from './port';

// The adapter's unit spec is the one file besides the adapter that names the client: it drives the
// adapter with the client's own errors (there is no EventStoreDB server here; the contract suite,
// test/contract/event-store.int.spec.ts, runs against one where EVENTSTORE_URL is set).

const event: NewEvent = { id: '00000000-0000-4000-8000-000000000001', type: 'CreditGranted', data: { amount: '1' } };

/** What a follower answers a write with: the leader's address in the status's metadata. */
function notLeader(): NotLeaderError {
  const status = Object.assign(new Error('Leader info available'), {
    code: 5,
    details: 'Leader info available',
    metadata: { getMap: () => ({ exception: 'not-leader', 'leader-endpoint-host': 'node2.esdb', 'leader-endpoint-port': '2113' }) },
  });
  return new NotLeaderError(status as unknown as ConstructorParameters<typeof NotLeaderError>[0]);
}

/** A status the client hands over without converting it (appendToStream's check of the server's features does). */
const rawUnavailable = () =>
  Object.assign(new Error('14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:2113'), {
    code: 14,
    details: 'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:2113',
  });

/** An async iterable that fails as the client's reads do when the call fails. */
function failing(error: unknown) {
  return {
    async *[Symbol.asyncIterator]() {
      throw error;
    },
  };
}

/** A subscription (subscribeToAll) that fails at once. */
function failingSubscription(error: unknown) {
  return {
    ...failing(error),
    destroyed: true,
    on() {
      return this;
    },
    unsubscribe: async () => {},
    destroy() {},
  };
}

/** The adapter over a fake client: each method of the client the adapter uses, replaceable. */
function storeOver(client: Partial<Record<'readStream' | 'readAll' | 'appendToStream' | 'subscribeToAll', (...args: unknown[]) => unknown>>) {
  const fake = {
    readStream: () => failing(new Error('readStream not expected')),
    readAll: () => failing(new Error('readAll not expected')),
    appendToStream: async () => {
      throw new Error('appendToStream not expected');
    },
    subscribeToAll: () => failingSubscription(new Error('subscribeToAll not expected')),
    dispose: async () => {},
    ...client,
  };
  vi.spyOn(EventStoreDBClient, 'connectionString').mockReturnValue(fake as unknown as EventStoreDBClient);
  return { store: createEventStoreDbStore('esdb://fake:2113?tls=false'), fake };
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('EventStoreDB adapter: a server that cannot be reached is the port\'s EventStoreUnreachableError', () => {
  const unreachable: [string, () => Error][] = [
    ['UnavailableError (a refused or cut connection)', () => new UnavailableError()],
    ['DeadlineExceededError', () => new DeadlineExceededError()],
    ['TimeoutError (the server timed the operation out)', () => new TimeoutError()],
    ['NotLeaderError (a follower asked to write)', notLeader],
    ['CancelledError (the server cancelled the call)', () => new CancelledError()],
    ['a raw gRPC status 14 UNAVAILABLE', rawUnavailable],
    ['a cluster discovery that found no node', () => new Error('Failed to discover after 10 attempts.')],
  ];

  for (const [name, error] of unreachable) {
    it(`readStream, readAll, headPosition and append: ${name}`, async () => {
      const { store } = storeOver({ readStream: () => failing(error()), readAll: () => failing(error()) });
      for (const call of [() => store.readStream('wallet-a'), () => store.readAll(), () => store.headPosition(), () => store.append('wallet-a', [event], 'no_stream')]) {
        const thrown = await call().then(() => null, (e: unknown) => e);
        expect(thrown).toBeInstanceOf(EventStoreUnreachableError);
        const unreachableError = thrown as EventStoreUnreachableError;
        expect(unreachableError.engine).toBe('eventstoredb');
        expect(unreachableError.cause).toBeInstanceOf(Error);
        expect((unreachableError.cause as Error).message).toBe(error().message);
        expect(databaseUnreachable(thrown)).toBe(true);
      }
    });
  }

  it('append: the append itself failing (after the look for duplicates went through)', async () => {
    for (const error of [new UnavailableError(), new DeadlineExceededError(), notLeader(), rawUnavailable()]) {
      const { store } = storeOver({
        readStream: () => failing(Object.assign(new Error('stream not found'), { type: 'stream-not-found' })),
        appendToStream: async () => {
          throw error;
        },
      });
      const thrown = await store.append('wallet-a', [event], 'no_stream').then(() => null, (e: unknown) => e);
      expect(thrown, error.message).toBeInstanceOf(EventStoreUnreachableError);
      expect((thrown as Error).cause).toBe(error);
      vi.restoreAllMocks();
    }
  });

  it('follow: the transient failures are retried as before, and only what escapes the retries is translated', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { store, fake } = storeOver({ subscribeToAll: vi.fn(() => failingSubscription(new UnavailableError())) });
    const following = store.follow()[Symbol.asyncIterator]().next();
    const outcome = following.then(() => null, (e: unknown) => e);
    await vi.runAllTimersAsync();
    const thrown = await outcome;
    // The first subscription and its 10 retries.
    expect(fake.subscribeToAll).toHaveBeenCalledTimes(11);
    expect(thrown).toBeInstanceOf(EventStoreUnreachableError);
    expect((thrown as Error).cause).toBeInstanceOf(UnavailableError);
  });

  it('a refused request, a concurrency conflict and the gateway\'s own failures go out as they are', async () => {
    const denied = new AccessDeniedError();
    const { store } = storeOver({ readStream: () => failing(denied), readAll: () => failing(denied) });
    await expect(store.readStream('wallet-a')).rejects.toBe(denied);
    await expect(store.readAll()).rejects.toBe(denied);
    expect(databaseUnreachable(await store.readAll().catch((e: unknown) => e))).toBe(false);
    vi.restoreAllMocks();

    const wrongVersion = Object.assign(new Error('wrong expected version'), { type: 'wrong-expected-version', actualVersion: 3n });
    const conflict = storeOver({
      readStream: () => ({ async *[Symbol.asyncIterator]() {} }),
      appendToStream: async (): Promise<ClientAppendResult> => {
        throw wrongVersion;
      },
    });
    await expect(conflict.store.append('wallet-a', [event], 2n)).rejects.toBeInstanceOf(ConcurrencyError);
    vi.restoreAllMocks();

    const bug = new TypeError("Cannot read properties of undefined (reading 'x')");
    const { store: buggy } = storeOver({ readStream: () => failing(bug) });
    await expect(buggy.readStream('wallet-a')).rejects.toBe(bug);
  });
});

describe('EventStoreDB adapter on a port where nothing listens (the real client, connection refused)', () => {
  it('every call fails with EventStoreUnreachableError, answered as an outage', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const store = createEventStoreDbStore(`esdb://127.0.0.1:${port}?tls=false`);
    try {
      for (const call of [() => store.readStream('wallet-a'), () => store.readAll(), () => store.headPosition(), () => store.append('wallet-a', [event], 'no_stream')]) {
        const thrown = await call().then(() => null, (e: unknown) => e);
        expect(thrown).toBeInstanceOf(EventStoreUnreachableError);
        expect(String((thrown as Error).message)).toMatch(/ECONNREFUSED|UNAVAILABLE/);
        expect(databaseUnreachable(thrown)).toBe(true);
      }
    } finally {
      await store.close();
    }
  });
});
