import type { EventStore, Position } from '../events/store/port';
import type { Sql } from '../storage/sql';

/**
 * How far each projection is behind the log, in seconds: the age of the oldest event it has not
 * applied yet (0 when it has applied every readable event). Read from the checkpoints in the
 * database, which every gateway instance shares, not from this process's runner: one read of the
 * checkpoints and one event read per distinct checkpoint (projections usually share one).
 */
export async function projectionLag(sql: Sql, store: EventStore, names: readonly string[], nowMs: number = Date.now()): Promise<Map<string, number>> {
  const rows = await sql.query<{ name: string; c: string; p: string }>(
    'SELECT name, commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints WHERE name = ANY($1::text[])',
    [names],
  );
  const at = new Map(rows.map((r) => [r.name, `${r.c}:${r.p}`]));
  const ages = new Map<string, Promise<number>>();
  const ageAfter = (key: string) => {
    let age = ages.get(key);
    if (!age) {
      const [commit, prepare] = key.split(':').map(BigInt) as [bigint, bigint];
      const after: Position = { commit, prepare };
      age = store.readAll({ after, maxCount: 1 }).then(([next]) => (next ? Math.max(0, (nowMs - next.createdAt.getTime()) / 1000) : 0));
      ages.set(key, age);
    }
    return age;
  };
  // A projection without a checkpoint row has applied nothing.
  const lags = await Promise.all(names.map((name) => ageAfter(at.get(name) ?? '-1:-1')));
  return new Map(names.map((name, i) => [name, lags[i]!]));
}
