import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyStore, type Claim, type ClaimResult } from '../../src/idempotency/store';
import { pgliteDatabase, postgresDatabase, type TestDatabase } from '../support/storage';

const engines: Array<[string, () => Promise<TestDatabase>]> = [['pglite', pgliteDatabase]];
const url = process.env.DATABASE_URL;
if (url) engines.push(['postgres', () => postgresDatabase(url)]);

let clock = 1_800_000_000;
let serial = 0;
/** A key of its own per test: the database is shared by the file's tests. */
const freshKey = () => `key-${++serial}-${Math.random().toString(36).slice(2)}`;
const FP = 'a'.repeat(64);
const OTHER_FP = 'b'.repeat(64);

function proceeded(result: ClaimResult): Claim {
  if (result.kind !== 'proceed') throw new Error(`expected proceed, got ${JSON.stringify(result)}`);
  return result.claim;
}

describe.each(engines)('idempotency store on %s', (_label, open) => {
  let db: TestDatabase;
  let one: IdempotencyStore;
  let two: IdempotencyStore;
  beforeAll(async () => {
    db = await open();
    const options = { now: () => clock, maxStoredBytes: 1024 };
    one = new IdempotencyStore(db.sql, options);
    two = new IdempotencyStore(db.another(), options); // a second gateway instance
    await one.migrate();
    await two.migrate(); // idempotent
  });
  afterAll(() => db.drop());

  it('20 concurrent claims of one key from two instances: exactly one proceeds, the others are told it is in flight', async () => {
    const key = freshKey();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).claim('acct_1', key, FP)));
    expect(results.filter((r) => r.kind === 'proceed')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'refused' && r.code === 'idempotency_in_flight')).toHaveLength(19);
  });

  it('20 concurrent claims of an abandoned key (lease over): exactly one takes it over', async () => {
    const key = freshKey();
    proceeded(await one.claim('acct_1', key, FP));
    clock += one.policy.leaseSeconds;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).claim('acct_1', key, FP)));
    expect(results.filter((r) => r.kind === 'proceed').map((r) => r.kind === 'proceed' && r.tookOver)).toEqual(['lease_expired']);
    expect(results.filter((r) => r.kind === 'refused' && r.code === 'idempotency_in_flight')).toHaveLength(19);
  });

  it('a completed 2xx replays the exact bytes, status and content type, on the other instance too', async () => {
    const key = freshKey();
    const claim = proceeded(await one.claim('acct_1', key, FP));
    const body = Buffer.from([0x7b, 0x22, 0xe2, 0x82, 0xac, 0x22, 0x3a, 0x00, 0xff, 0x7d]); // not even valid UTF-8
    expect(await one.complete(claim, { status: 201, contentType: 'application/json; charset=utf-8', body })).toBe('stored');
    for (const store of [one, two]) {
      const replay = await store.claim('acct_1', key, FP);
      expect(replay.kind).toBe('replay');
      if (replay.kind !== 'replay') return;
      expect(replay.response.status).toBe(201);
      expect(replay.response.contentType).toBe('application/json; charset=utf-8');
      expect(Buffer.compare(replay.response.body, body)).toBe(0);
    }
  });

  it('a string body is kept as its UTF-8 bytes', async () => {
    const key = freshKey();
    const claim = proceeded(await one.claim('acct_1', key, FP));
    await one.complete(claim, { status: 200, contentType: 'application/json', body: '{"prompt":"café ☕"}' });
    const replay = await two.claim('acct_1', key, FP);
    expect(replay.kind === 'replay' && replay.response.body.toString('utf8')).toBe('{"prompt":"café ☕"}');
  });

  it('the same key with a different body is refused as reuse, while running and after success', async () => {
    const key = freshKey();
    const claim = proceeded(await one.claim('acct_1', key, FP));
    expect(await two.claim('acct_1', key, OTHER_FP)).toEqual({ kind: 'refused', code: 'idempotency_key_reuse' });
    await one.complete(claim, { status: 200, contentType: 'application/json', body: '{}' });
    expect(await two.claim('acct_1', key, OTHER_FP)).toEqual({ kind: 'refused', code: 'idempotency_key_reuse' });
  });

  it('a non-2xx frees the key at once, for any body', async () => {
    const key = freshKey();
    const claim = proceeded(await one.claim('acct_1', key, FP));
    expect(await one.complete(claim, { status: 502, contentType: 'application/json', body: '{"error":{}}' })).toBe('released');
    proceeded(await two.claim('acct_1', key, OTHER_FP));
  });

  it('abandon frees the key; a stale claim cannot complete or free a key taken over by another', async () => {
    const key = freshKey();
    const first = proceeded(await one.claim('acct_1', key, FP));
    expect(await one.abandon(first)).toBe(true);
    const second = proceeded(await one.claim('acct_1', key, FP));
    clock += one.policy.leaseSeconds;
    const third = proceeded(await two.claim('acct_1', key, FP));
    expect(await one.complete(second, { status: 200, contentType: 'text/plain', body: 'stale' })).toBe('lost');
    expect(await one.abandon(second)).toBe(false);
    expect(await two.complete(third, { status: 200, contentType: 'text/plain', body: 'fresh' })).toBe('stored');
    const replay = await one.claim('acct_1', key, FP);
    expect(replay.kind === 'replay' && replay.response.body.toString()).toBe('fresh');
  });

  it('an in-flight claim holds the key until its lease ends, then anyone may take it over', async () => {
    const key = freshKey();
    proceeded(await one.claim('acct_1', key, FP));
    clock += one.policy.leaseSeconds - 1;
    expect(await two.claim('acct_1', key, FP)).toEqual({ kind: 'refused', code: 'idempotency_in_flight' });
    clock += 1;
    const taken = await two.claim('acct_1', key, OTHER_FP);
    expect(taken.kind === 'proceed' && taken.tookOver).toBe('lease_expired');
  });

  it('past retention a remembered key counts as new', async () => {
    const key = freshKey();
    const claim = proceeded(await one.claim('acct_1', key, FP));
    await one.complete(claim, { status: 200, contentType: 'application/json', body: '{"old":true}' });
    clock += one.policy.retentionSeconds - 1;
    expect((await two.claim('acct_1', key, FP)).kind).toBe('replay');
    clock += 1;
    const fresh = await two.claim('acct_1', key, OTHER_FP);
    expect(fresh.kind === 'proceed' && fresh.tookOver).toBe('retention_passed');
  });

  it('a 2xx above the size limit is remembered as succeeded but not cached', async () => {
    const key = freshKey();
    const claim = proceeded(await one.claim('acct_1', key, FP));
    expect(await one.complete(claim, { status: 200, contentType: 'application/json', body: 'x'.repeat(1025) })).toBe('not_cached');
    expect(await two.claim('acct_1', key, FP)).toEqual({ kind: 'refused', code: 'idempotency_response_not_cached' });
    expect(await two.claim('acct_1', key, OTHER_FP)).toEqual({ kind: 'refused', code: 'idempotency_key_reuse' });
  });

  it('a 2xx whose bytes were not captured (body null) is not cached either', async () => {
    const key = freshKey();
    const claim = proceeded(await one.claim('acct_1', key, FP));
    expect(await one.complete(claim, { status: 200, contentType: 'application/octet-stream', body: null })).toBe('not_cached');
    expect(await one.claim('acct_1', key, FP)).toEqual({ kind: 'refused', code: 'idempotency_response_not_cached' });
  });

  it('the scope is the account: the same key in two accounts is two keys', async () => {
    const key = freshKey();
    const a = proceeded(await one.claim('acct_a', key, FP));
    proceeded(await two.claim('acct_b', key, OTHER_FP));
    await one.complete(a, { status: 200, contentType: 'text/plain', body: 'for a' });
    const replay = await one.claim('acct_a', key, FP);
    expect(replay.kind === 'replay' && replay.response.body.toString()).toBe('for a');
    expect(await one.claim('acct_b', key, OTHER_FP)).toEqual({ kind: 'refused', code: 'idempotency_in_flight' });
  });

  it('purge deletes keys past retention and claims past their lease, and spares the rest', async () => {
    // A database of its own for this count: other tests' rows would age along with the clock.
    const own = await open();
    try {
      const store = new IdempotencyStore(own.sql, { now: () => clock });
      await store.migrate();
      const old = proceeded(await store.claim('acct_1', 'old', FP));
      await store.complete(old, { status: 200, contentType: 'text/plain', body: 'old' });
      proceeded(await store.claim('acct_1', 'abandoned', FP));
      clock += store.policy.retentionSeconds - store.policy.leaseSeconds;
      const recent = proceeded(await store.claim('acct_1', 'recent', FP));
      await store.complete(recent, { status: 200, contentType: 'text/plain', body: 'recent' });
      proceeded(await store.claim('acct_1', 'running', FP));
      clock += store.policy.leaseSeconds;
      // old: past retention; abandoned: past retention and lease; running: lease just ended.
      expect(await store.purge()).toBe(3);
      const rows = await own.sql.query<{ idem_key: string }>('SELECT idem_key FROM idempotency_keys ORDER BY idem_key');
      expect(rows.map((r) => r.idem_key)).toEqual(['recent']);
      expect(await store.purge()).toBe(0);
    } finally {
      await own.drop();
    }
  });
});
