import { oneAtATime, type Projection } from '../projection';

/** API keys by id and by SHA-256 hash (the authentication lookup). `last_used_at` lives
 * in key_activity, written by the request path, so a rebuild does not erase it. */
export const keysProjection: Projection = {
  name: 'keys',
  streams: ['key-'],
  tables: ['api_keys'],
  schema: `
CREATE TABLE IF NOT EXISTS api_keys (
  key_id text PRIMARY KEY,
  account_id text NOT NULL,
  name text NOT NULL,
  prefix text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  allowed_models jsonb,
  expires_at bigint,
  enabled boolean NOT NULL,
  spend_cap bigint,
  status text NOT NULL,
  revealable boolean NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS api_keys_by_account ON api_keys (account_id, created_at);
-- An agent key's agent (null: an ordinary key). Added later, so added here.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS agent_id text;
CREATE INDEX IF NOT EXISTS api_keys_by_agent ON api_keys (agent_id) WHERE agent_id IS NOT NULL;
-- The channel group the key is bound to (null: none). Added later, so added here.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS channel_group text;
CREATE TABLE IF NOT EXISTS key_activity (
  key_id text PRIMARY KEY,
  last_used_at bigint NOT NULL
);`,

  applyBatch: oneAtATime(async (tx, event, recorded) => {
    const keyId = recorded.streamId.slice('key-'.length);
    switch (event.type) {
      case 'KeyIssued': {
        const d = event.data;
        await tx.query(
          `INSERT INTO api_keys (key_id, account_id, name, prefix, key_hash, allowed_models, expires_at, enabled, spend_cap,
                                 status, revealable, created_at, updated_at, agent_id, channel_group)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9::bigint, 'active', $10, $11, $11, $12, $13)`,
          [
            keyId,
            d.account_id,
            d.name,
            d.prefix,
            d.hash,
            d.allowed_models === null ? null : JSON.stringify(d.allowed_models),
            d.expires_at,
            d.enabled,
            d.spend_cap === null ? null : String(d.spend_cap),
            d.revealable,
            d.at,
            d.agent_id ?? null,
            d.group ?? null,
          ],
        );
        return;
      }
      case 'KeyUpdated': {
        const c = event.data.changes;
        const sets: string[] = [];
        const params: unknown[] = [keyId, event.data.at];
        const set = (column: string, value: unknown, cast = '') => {
          params.push(value);
          sets.push(`${column} = $${params.length}${cast}`);
        };
        if (c.name !== undefined) set('name', c.name);
        if (c.allowed_models !== undefined) set('allowed_models', c.allowed_models === null ? null : JSON.stringify(c.allowed_models), '::jsonb');
        if (c.expires_at !== undefined) set('expires_at', c.expires_at);
        if (c.enabled !== undefined) set('enabled', c.enabled);
        if (c.spend_cap !== undefined) set('spend_cap', c.spend_cap === null ? null : String(c.spend_cap), '::bigint');
        if (c.group !== undefined) set('channel_group', c.group);
        await tx.query(`UPDATE api_keys SET updated_at = $2${sets.map((s) => `, ${s}`).join('')} WHERE key_id = $1`, params);
        return;
      }
      case 'KeyRevoked':
        await tx.query(`UPDATE api_keys SET status = 'revoked', updated_at = $2 WHERE key_id = $1`, [keyId, event.data.at]);
        return;
      case 'KeyDeleted':
        await tx.query(`UPDATE api_keys SET status = 'deleted', revealable = false, updated_at = $2 WHERE key_id = $1`, [keyId, event.data.at]);
        return;
      default:
        return;
    }
  }),
};
