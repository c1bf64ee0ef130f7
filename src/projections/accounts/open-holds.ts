import type { Sql } from '../../storage/sql';

/** The open holds of the `holds` read model. */
export interface OpenHolds {
  readonly open: number;
  /** Age of the oldest open hold, seconds; 0 when none is open. */
  readonly oldestAgeSeconds: number;
  /** Open holds past their deadline, waiting for the hold sweeper. */
  readonly expired: number;
}

/** One read of the partial index of open holds (as many rows as calls in flight). `now`: unix
 * seconds, the gateway's clock (holds' created_at and expires_at are on it). */
export async function openHolds(sql: Sql, now: number): Promise<OpenHolds> {
  const [row] = await sql.query<{ open: number; oldest: string | null; expired: number }>(
    `SELECT count(*)::int AS open, min(created_at)::text AS oldest, (count(*) FILTER (WHERE expires_at <= $1))::int AS expired
       FROM holds WHERE status = 'open'`,
    [now],
  );
  const oldest = row?.oldest == null ? null : Number(row.oldest);
  return { open: Number(row?.open ?? 0), oldestAgeSeconds: oldest === null ? 0 : Math.max(0, now - oldest), expired: Number(row?.expired ?? 0) };
}
