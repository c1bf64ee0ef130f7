import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresEventStore, migrateEvents } from '../../src/events/store/postgres';
import { START, comparePositions, type EventStore } from '../../src/events/store/port';
import { testDatabase, type TestDatabase } from '../support/storage';

let db: TestDatabase;
let store: EventStore;
beforeAll(async () => {
  db = await testDatabase();
  await migrateEvents(db.sql);
  store = createPostgresEventStore(db.sql);
});
afterAll(() => db.drop());

describe(`headPosition (${process.env.DATABASE_URL ? 'postgres' : 'pglite'})`, () => {
  it('is START on an empty log, then the position of the newest committed event', async () => {
    expect(await store.headPosition()).toEqual(START);
    const first = await store.append(`s-${randomUUID()}`, [{ id: randomUUID(), type: 'T', data: {} }], 'no_stream');
    expect(await store.headPosition()).toEqual(first.position);
    const second = await store.append(`s-${randomUUID()}`, [{ id: randomUUID(), type: 'T', data: {} }, { id: randomUUID(), type: 'T', data: {} }], 'no_stream');
    const head = await store.headPosition();
    expect(head).toEqual(second.position);
    expect(comparePositions(head, first.position)).toBe(1);
    // readAll shows an event once no older transaction of the cluster is in flight (other
    // test files run beside this one), so it reaches the head soon, not necessarily at once.
    await expect.poll(async () => (await store.readAll()).at(-1)?.position, { timeout: 10_000 }).toEqual(head);
  });
});
