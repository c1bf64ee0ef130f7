import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ConfigError, DEMO_CONFIG_PATH, parseConfig } from './load';
import type { GatewayConfig } from './schema';

/** A config file read and validated whole, with the SHA-256 digest of its text; or every problem found. */
export type ReadConfig = { ok: true; config: GatewayConfig; digest: string; path: string } | { ok: false; errors: string };

/** Reads and validates the config file (absent path: the demo config), changing nothing. */
export async function readConfig(path: string | undefined, env: NodeJS.ProcessEnv): Promise<ReadConfig> {
  const file = path && path !== '' ? path : DEMO_CONFIG_PATH;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return { ok: false, errors: `cannot read config file ${file}: ${(error as Error).message}` };
  }
  try {
    return { ok: true, config: parseConfig(text, env, file), digest: createHash('sha256').update(text).digest('hex'), path: file };
  } catch (error) {
    if (error instanceof ConfigError) return { ok: false, errors: error.message };
    throw error;
  }
}
