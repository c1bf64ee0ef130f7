import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { ReloadOutcome } from '../channels/admin';
import type { ChannelBoard } from '../channels/board';
import { healthPolicyOf, probeIntervalMsOf } from '../channels/health';
import type { ChannelProbes } from '../channels/probe';
import type { ModelRegistry } from '../config/registry';
import { readConfig } from '../config/reload';
import { ConfigApplied, GATEWAY_CONFIG_STREAM } from '../events/catalog';
import type { EventStore } from '../events/store/port';
import type { ConfiguredProbe } from '../media-check/from-config';
import type { ProjectionRunner } from '../projections/runner/runner';
import type { Settings } from './settings';

export interface ReloadParts {
  readonly settings: Settings;
  readonly registry: ModelRegistry;
  readonly mediaProbe: ConfiguredProbe;
  readonly board: ChannelBoard;
  readonly probes: ChannelProbes;
  readonly store: EventStore;
  readonly runner: ProjectionRunner;
  readonly clock: () => number;
  /** The app's logger (it exists once the gateway serves, before any reload can be asked for). */
  readonly log: () => FastifyBaseLogger;
}

/**
 * Live configuration (SIGHUP, `POST /admin/v1/config/reload`): the file read and validated whole, then
 * applied in one turn of the event loop (models, prices and channels together; a call in flight keeps the
 * model, price and routes it took), recorded as `ConfigApplied`. Reloads run one at a time, in order.
 */
export function configReload(parts: ReloadParts): (trigger: 'sighup' | 'admin') => Promise<ReloadOutcome> {
  const { settings, registry, mediaProbe, board, probes, store, runner, clock } = parts;
  let reloads: Promise<unknown> = Promise.resolve();
  return (trigger) => {
    const run = reloads.then(async (): Promise<ReloadOutcome> => {
      const read = await readConfig(settings.configPath, settings.env);
      if (!read.ok) return read;
      registry.replace(read.config);
      mediaProbe.apply(read.config.media_probe);
      board.setPolicy(healthPolicyOf(read.config.channel_health));
      probes.start(probeIntervalMsOf(read.config.channel_health));
      const event = {
        id: randomUUID(),
        type: ConfigApplied.type,
        data: { digest: read.digest, trigger, path: read.path.slice(0, 4096), channels: read.config.channels.length, models: read.config.models.length, at: clock() },
        metadata: trigger === 'admin' ? { actor: 'admin' } : {},
      };
      const appended = await store.append(GATEWAY_CONFIG_STREAM, [event], 'any');
      await runner.waitFor(appended.position);
      parts.log().info({ digest: read.digest, path: read.path, trigger }, 'configuration reloaded');
      return { ok: true, digest: read.digest, path: read.path, channels: read.config.channels.length, models: read.config.models.length };
    });
    reloads = run.catch(() => {});
    return run;
  };
}
