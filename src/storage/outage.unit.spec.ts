import { createServer } from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { EventStoreUnreachableError } from '../events/store/port';
import { failureOf } from '../http/errors';
import { databaseUnreachable } from './outage';

/** A server-side error as `pg` hands it over: the SQLSTATE in `code`. */
const serverError = (code: string, message = 'server said no') => Object.assign(new pg.DatabaseError(message, message.length, 'error'), { code });

/** A TCP port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('databaseUnreachable', () => {
  it('is true for a pool that cannot connect: connection refused, as pg reports it', async () => {
    const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${await closedPort()}/postgres`, connectionTimeoutMillis: 2_000 });
    const error = await pool.query('SELECT 1').catch((e: unknown) => e);
    await pool.end();
    expect(databaseUnreachable(error)).toBe(true);
  });

  it('is true for a server that ended the connection or cannot serve now (57P01, 57P02, 57P03, 53300, class 08)', () => {
    for (const code of ['57P01', '57P02', '57P03', '53300', '08000', '08003', '08006', '08001', '08004', '08P01'])
      expect(databaseUnreachable(serverError(code)), code).toBe(true);
  });

  it('is true for what pg, pg-pool and PGlite say without a code: a cut connection, a connection timeout, a broken client, a closed PGlite', () => {
    for (const message of [
      'Connection terminated unexpectedly',
      'Connection terminated due to connection timeout',
      'timeout exceeded when trying to connect',
      'Client has encountered a connection error and is not queryable',
      // PGlite's own, once its instance is closed or has died.
      'PGlite is closed',
    ])
      expect(databaseUnreachable(new Error(message)), message).toBe(true);
    for (const code of ['ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE', 'ENOTFOUND'])
      expect(databaseUnreachable(Object.assign(new Error(code), { code })), code).toBe(true);
  });

  it('looks inside a cause and an AggregateError (every address of a name refused)', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' });
    expect(databaseUnreachable(new AggregateError([refused, refused]))).toBe(true);
    expect(databaseUnreachable(new Error('append failed', { cause: serverError('57P01') }))).toBe(true);
  });

  it("is true for the event store port's EventStoreUnreachableError (an EventStoreDB that cannot be reached), also as a cause", () => {
    const away = new EventStoreUnreachableError('eventstoredb', Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }));
    expect(databaseUnreachable(away)).toBe(true);
    expect(databaseUnreachable(new Error('settlement failed', { cause: away }))).toBe(true);
    const failure = failureOf(away, 'req_1');
    expect(failure.code).toBe('service_unavailable');
    expect(failure.status).toBe(503);
    expect(failure.headers).toEqual({ 'retry-after': '5' });
  });

  it('is false for a statement the server refused and for the gateway\'s own failures', () => {
    for (const code of ['23505', '42601', '40001', '22P02', '42P01', '57014'])
      expect(databaseUnreachable(serverError(code)), code).toBe(false);
    expect(databaseUnreachable(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(false);
    expect(databaseUnreachable(new Error('internal'))).toBe(false);
    expect(databaseUnreachable(null)).toBe(false);
    expect(databaseUnreachable('ECONNREFUSED')).toBe(false);
  });
});
