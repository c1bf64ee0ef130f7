import { oneAtATime, type Projection } from '../projection';

/**
 * Channels' state changes and the configurations applied: `channel_states` (each channel's latest change),
 * `channel_changes` (every change: when and why a channel left and came back) and `config_changes` (every
 * applied config's digest). Few events: applied one at a time.
 */
export const channelsProjection: Projection = {
  name: 'channels',
  streams: ['channel-', 'gateway-config'],
  tables: ['channel_states', 'channel_changes', 'config_changes'],
  schema: `
CREATE TABLE IF NOT EXISTS channel_states (
  channel_id text PRIMARY KEY,
  status text NOT NULL,
  cause text NOT NULL,
  reason text NOT NULL,
  until bigint,
  changed_at bigint NOT NULL
);
-- The change's event and its place in the channel's stream (instances follow each other's changes by them).
ALTER TABLE channel_states ADD COLUMN IF NOT EXISTS event_id uuid;
ALTER TABLE channel_states ADD COLUMN IF NOT EXISTS revision bigint;
CREATE TABLE IF NOT EXISTS channel_changes (
  event_id uuid PRIMARY KEY,
  channel_id text NOT NULL,
  from_status text NOT NULL,
  to_status text NOT NULL,
  cause text NOT NULL,
  reason text NOT NULL,
  until bigint,
  actor text,
  at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS channel_changes_by_channel ON channel_changes (channel_id, at);
CREATE TABLE IF NOT EXISTS config_changes (
  event_id uuid PRIMARY KEY,
  digest text NOT NULL,
  trigger text NOT NULL,
  path text NOT NULL,
  channels integer NOT NULL,
  models integer NOT NULL,
  at bigint NOT NULL
);`,

  applyBatch: oneAtATime(async (tx, event, recorded) => {
    if (event.type === 'ConfigApplied') {
      const d = event.data;
      await tx.query(
        `INSERT INTO config_changes (event_id, digest, trigger, path, channels, models, at) VALUES ($1::uuid, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
        [recorded.id, d.digest, d.trigger, d.path, d.channels, d.models, d.at],
      );
      return;
    }
    if (event.type !== 'ChannelStateChanged') return;
    const d = event.data;
    const actor = typeof recorded.metadata.actor === 'string' ? recorded.metadata.actor : null;
    await tx.query(
      `INSERT INTO channel_changes (event_id, channel_id, from_status, to_status, cause, reason, until, actor, at)
       VALUES ($1::uuid, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
      [recorded.id, d.channel_id, d.from, d.to, d.cause, d.reason, d.until, actor, d.at],
    );
    await tx.query(
      `INSERT INTO channel_states (channel_id, status, cause, reason, until, changed_at, event_id, revision) VALUES ($1, $2, $3, $4, $5, $6, $7::uuid, $8::bigint)
       ON CONFLICT (channel_id) DO UPDATE SET status = $2, cause = $3, reason = $4, until = $5, changed_at = $6, event_id = $7::uuid, revision = $8::bigint`,
      [d.channel_id, d.to, d.cause, d.reason, d.until, d.at, recorded.id, recorded.revision.toString()],
    );
  }),
};
