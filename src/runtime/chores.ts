import type { FastifyBaseLogger } from 'fastify';
import { startChore } from '../jobs/chore';

export interface GatewayChores {
  readonly sweepHolds: () => Promise<unknown>;
  readonly purgeIdempotencyKeys: () => Promise<unknown>;
  readonly purgeConsoleSessions: () => Promise<unknown>;
  readonly followChannels: () => Promise<unknown>;
  readonly followChannelsEveryMs: number;
  readonly sweepHostedMedia: () => Promise<unknown>;
  readonly log: FastifyBaseLogger;
}

/** Every instance's background chores and their periods; returns what stops them all (the shutdown's first step). */
export function startGatewayChores(chores: GatewayChores): () => void {
  const { log } = chores;
  const stops = [
    startChore(chores.sweepHolds, 30_000, (error) => log.error({ err: error }, 'hold sweeper failed')),
    startChore(chores.purgeIdempotencyKeys, 10 * 60_000, (error) => log.error({ err: error }, 'idempotency key purge failed')),
    startChore(chores.purgeConsoleSessions, 60 * 60_000, (error) => log.error({ err: error }, 'console session purge failed')),
    startChore(chores.followChannels, chores.followChannelsEveryMs, (error) => log.warn({ err: error }, 'channel states of other instances could not be read')),
    startChore(chores.sweepHostedMedia, 10 * 60_000, (error) => log.error({ err: error }, 'hosted media sweeper failed')),
  ];
  return () => {
    for (const stop of stops) stop();
  };
}
