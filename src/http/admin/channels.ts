import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ChannelHealthAdmin } from '../../channels/admin';
import type { ChannelConfig } from '../../config/schema';
import { channelStates, type ChannelStateRow } from '../../projections/channels/queries';
import type { ProjectionRunner } from '../../projections/runner/runner';
import type { SqlQuery } from '../../storage/sql';
import type { RouteDoc } from '../openapi/route-doc';
import { AdminError, parse } from './admin-error';

const CHANNEL =
  '`{id, protocol, group, priority, weight, models, status (healthy|cooling|disabled), disabled_by (credentials|operator|null), cooling_until, last_error, last_error_at, latency_ms, successes, failures, success_rate, last_change: {from, to, cause, reason, at} | null}`';
const NO_CHANNEL = { 404: 'No channel of that id in the config in force: `channel_not_found`.' };
const Params = z.object({ id: z.string().min(1).max(200) });

const doc = (operationId: string, summary: string, description: string, errors = {}): RouteDoc => ({
  operationId,
  summary,
  tags: ['admin-channels'],
  responses: { 200: { description } },
  ...(Object.keys(errors).length > 0 ? { errors } : {}),
});

/**
 * The channels' live health (this instance's board) with each one's latest recorded change (the `channels`
 * projection); an operator's enable and disable; a probe on demand.
 */
export function channelAdminRoutes(health: ChannelHealthAdmin, sql: SqlQuery, runner: ProjectionRunner) {
  const view = (channel: ChannelConfig, last: ChannelStateRow | undefined) => {
    const s = health.board.state(channel.id);
    const attempts = s.successes + s.failures;
    return {
      id: channel.id,
      protocol: channel.protocol,
      group: channel.group,
      priority: channel.priority,
      weight: channel.weight,
      models: Array.isArray(channel.models) ? channel.models : Object.keys(channel.models),
      status: s.status,
      disabled_by: s.disabledBy,
      cooling_until: s.coolingUntil === null ? null : Math.ceil(s.coolingUntil / 1000),
      last_error: s.lastError,
      last_error_at: s.lastErrorAt === null ? null : Math.floor(s.lastErrorAt / 1000),
      latency_ms: s.latencyMs,
      successes: s.successes,
      failures: s.failures,
      success_rate: attempts === 0 ? null : Number((s.successes / attempts).toFixed(4)),
      last_change: last ? { to: last.status, cause: last.cause, reason: last.reason, at: last.changedAt } : null,
    };
  };
  const lastChanges = async (): Promise<Map<string, ChannelStateRow>> => {
    await health.idle();
    await runner.catchUpToHead();
    return new Map((await channelStates(sql)).map((r) => [r.channelId, r]));
  };
  const channelOf = (id: string) => {
    const channel = health.channels().find((c) => c.id === id);
    if (!channel) throw new AdminError(404, 'channel_not_found', `no channel ${id} in the config in force`);
    return channel;
  };

  return async (app: FastifyInstance) => {
    app.get('/channels', { config: { openapi: doc('listChannels', 'Channels and their live health', `\`{data: [channel]}\`, each ${CHANNEL}.`) } }, async () => {
      const last = await lastChanges();
      return { data: health.channels().map((c) => view(c, last.get(c.id))) };
    });
    for (const action of ['enable', 'disable'] as const) {
      const summary = action === 'enable' ? 'Enable a channel (it is routed to again, its cooldown forgotten)' : 'Disable a channel (no call or probe goes to it until it is enabled)';
      app.post(`/channels/:id/${action}`, { config: { openapi: doc(`${action}Channel`, summary, `The channel: ${CHANNEL}.`, NO_CHANNEL) } }, async (request) => {
        const channel = channelOf(parse(Params, request.params).id);
        health.board.operator(channel.id, action);
        return view(channel, (await lastChanges()).get(channel.id));
      });
    }
    app.post(
      '/config/reload',
      {
        config: {
          openapi: {
            ...doc('reloadConfig', 'Re-read the config file, validate it whole and apply it', '`{applied: true, digest, path, channels, models}`: the SHA-256 of the file, now in force (recorded as a `ConfigApplied` event).'),
            errors: { 400: 'The file is unreadable or invalid: `invalid_config`, with every problem; the running config stays.' },
          },
        },
      },
      async () => {
        const outcome = await health.reload('admin');
        if (!outcome.ok) throw new AdminError(400, 'invalid_config', outcome.errors);
        const { ok: _ok, ...applied } = outcome;
        return { applied: true, ...applied };
      },
    );
    app.post('/channels/:id/probe', { config: { openapi: doc('probeChannel', 'Probe a channel now with its own key (chat: a minimal request; task protocols: a GET of an unknown task; images and speech: the model list)', `\`{probe: ok|failed|skipped, channel}\`, the channel ${CHANNEL}.`, NO_CHANNEL) } }, async (request) => {
      const channel = channelOf(parse(Params, request.params).id);
      const probe = await health.probe(channel);
      return { probe, channel: view(channel, (await lastChanges()).get(channel.id)) };
    });
  };
}
