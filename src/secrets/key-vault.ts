import type { Sql } from '../storage/sql';
import type { KeyCipher } from './api-key';

export const KEY_VAULT_SCHEMA = `
CREATE TABLE IF NOT EXISTS key_vault (
  key_id text PRIMARY KEY,
  ciphertext text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);`;

/**
 * Raw keys, encrypted. Not an event and not a projection: events are immutable, and
 * deleting a key must destroy its material, so the ciphertext lives in its own table
 * that no rebuild touches.
 */
export class KeyVault {
  constructor(
    private readonly sql: Sql,
    private readonly cipher: KeyCipher,
  ) {}

  async store(keyId: string, raw: string): Promise<void> {
    await this.sql.query(
      'INSERT INTO key_vault (key_id, ciphertext) VALUES ($1, $2) ON CONFLICT (key_id) DO UPDATE SET ciphertext = EXCLUDED.ciphertext',
      [keyId, this.cipher.encrypt(keyId, raw)],
    );
  }

  async reveal(keyId: string): Promise<string | null> {
    const [row] = await this.sql.query<{ ciphertext: string }>('SELECT ciphertext FROM key_vault WHERE key_id = $1', [keyId]);
    return row ? this.cipher.decrypt(keyId, row.ciphertext) : null;
  }

  async destroy(keyId: string): Promise<void> {
    await this.sql.query('DELETE FROM key_vault WHERE key_id = $1', [keyId]);
  }
}
