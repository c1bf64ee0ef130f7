import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { ConfigSchema, type GatewayConfig } from './schema';

/** `config/demo.yaml` of the package, found from this module upwards: it runs from src/config/
 * (tests) or from the bundle in dist/ (bin/gateway.mjs). */
function demoConfigPath(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dirname(dir) !== dir; dir = dirname(dir)) {
    const candidate = join(dir, 'config', 'demo.yaml');
    if (existsSync(candidate)) return candidate;
  }
  return fileURLToPath(new URL('../../config/demo.yaml', import.meta.url));
}

export const DEMO_CONFIG_PATH = demoConfigPath();

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** `${VAR}` and `${VAR:-default}` expand from the environment; an unset `${VAR}` is an error,
 * so a missing upstream key is found at start, not on the first request. */
export function expandEnv(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_match, name: string, fallback: string | undefined) => {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    throw new ConfigError(`config refers to \${${name}}, which is not set`);
  });
}

/** Expands string values only, so comments and keys may mention `${VAR}` freely. */
function expandValues(value: unknown, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') return expandEnv(value, env);
  if (Array.isArray(value)) return value.map((v) => expandValues(v, env));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandValues(v, env)]));
  return value;
}

export function parseConfig(text: string, env: NodeJS.ProcessEnv = process.env, source = 'config'): GatewayConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError(`${source}: not valid YAML or JSON: ${(error as Error).message}`);
  }
  const result = ConfigSchema.safeParse(expandValues(raw ?? {}, env));
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new ConfigError(`${source} is invalid:\n${lines.join('\n')}`);
  }
  return result.data;
}

export function loadConfig(path: string | undefined, env: NodeJS.ProcessEnv = process.env): { config: GatewayConfig; path: string } {
  const file = path && path !== '' ? path : DEMO_CONFIG_PATH;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config file ${file}: ${(error as Error).message}`);
  }
  return { config: parseConfig(text, env, file), path: file };
}
