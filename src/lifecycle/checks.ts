import type { EventStore } from '../events/store/port';
import { LimiterUnavailableError, type RateLimiter } from '../limits';
import type { Sql } from '../storage/sql';
import { projectionLag } from './projection-lag';
import { NotReady, type Check } from './readiness';

export interface GatewayParts {
  readonly store: EventStore;
  readonly sql: Sql;
  readonly limiter: RateLimiter;
  /** The projections the runner feeds, by name. */
  readonly projections: readonly string[];
  /** READY_MAX_PROJECTION_LAG_S: the most a projection may be behind the log; null: not checked. */
  readonly maxProjectionLagS: number | null;
}

/** What `/readyz` checks: the event store, the projection database, Redis when the rate limits
 * live there, and how far the projections are behind the log. */
export function gatewayChecks(parts: GatewayParts): Check[] {
  const checks: Check[] = [
    { part: 'event_store', run: async () => void (await parts.store.headPosition()) },
    { part: 'database', run: async () => void (await parts.sql.query('SELECT 1')) },
  ];
  const { limiter } = parts;
  if (limiter.ping)
    checks.push({
      part: 'redis',
      async run() {
        try {
          await limiter.ping!();
        } catch (error) {
          // The limiter knows Redis is down (and says so once in the log): nothing secret in that.
          if (error instanceof LimiterUnavailableError) throw new NotReady('Redis cannot be reached');
          throw error;
        }
      },
    });
  const max = parts.maxProjectionLagS;
  if (max !== null)
    checks.push({
      part: 'projections',
      async run() {
        const lags = await projectionLag(parts.sql, parts.store, parts.projections);
        const worst = Math.max(0, ...lags.values());
        const behind = [...lags].filter(([, lag]) => lag > max).map(([name]) => name);
        if (behind.length > 0) throw new NotReady(`${behind.join(', ')} ${behind.length === 1 ? 'is' : 'are'} ${Math.round(worst)} s behind the log (READY_MAX_PROJECTION_LAG_S is ${max})`);
        return { lag_s: Math.round(worst * 1000) / 1000 };
      },
    });
  return checks;
}
