import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from './load';
import { ModelRegistry } from './registry';
import { SIGNUP_DEFAULTS } from './schema';

describe('config', () => {
  it('expands ${VAR} and ${VAR:-default} in values, and refuses an unset ${VAR}', () => {
    const text = `
channels:
  - id: c1   # \${NOT_EXPANDED_IN_COMMENTS}
    protocol: chat-completions
    base_url: \${BASE:-http://127.0.0.1:9}
    api_key: \${SECRET}
    models: [m]
models:
  - id: m
    price: {input: "0.15", output: "0.60"}
`;
    const config = parseConfig(text, { SECRET: 's3' });
    expect(config.channels[0]).toMatchObject({ base_url: 'http://127.0.0.1:9', api_key: 's3', group: 'default', priority: 0, weight: 1 });
    expect(() => parseConfig(text, {})).toThrow(/SECRET/);
  });

  it('refuses float prices, unknown channel models and duplicate ids with the path in the message', () => {
    expect(() => parseConfig('models: [{id: m, price: {input: 0.15}}]', {})).toThrow(/models\.0\.price\.input/);
    expect(() =>
      parseConfig('models: [{id: m}]\nchannels: [{id: c, protocol: messages, base_url: "http://x", models: [other]}]', {}),
    ).toThrow(/unknown model other/);
    expect(() => parseConfig('models: [{id: m, aliases: [n]}, {id: n}]', {})).toThrow(ConfigError);
  });

  it('ships a demo catalogue that loads, with aliases resolving to canonical ids', () => {
    const { config } = loadConfig(undefined, {});
    const registry = new ModelRegistry(config);
    expect(config.models.filter((m) => m.kind === 'text').length).toBeGreaterThanOrEqual(40);
    const aliased = config.models.find((m) => m.aliases.length > 0)!;
    expect(registry.resolve(aliased.aliases[0]!)?.id).toBe(aliased.id);
    expect(registry.resolve('no-such-model')).toBeUndefined();
    expect(config.models.some((m) => !m.callable)).toBe(true);
    expect(config.presets?.voices.map((v) => v.id)).toEqual(['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer']);
  });

  it('takes optional presets of voices and avatars: each list defaults to empty, unknown keys and duplicate ids are refused', () => {
    expect(parseConfig('models: []', {}).presets).toBeUndefined();
    expect(parseConfig('presets: {voices: [{id: alloy, name: Alloy}]}', {}).presets).toEqual({ voices: [{ id: 'alloy', name: 'Alloy' }], avatars: [] });
    expect(() => parseConfig('presets: {voices: [], music: []}', {})).toThrow(ConfigError);
    expect(() => parseConfig('presets: {voices: [{id: alloy}]}', {})).toThrow(/presets\.voices\.0\.name/);
    expect(() => parseConfig('presets: {avatars: [{id: a, name: A}, {id: a, name: B}]}', {})).toThrow(/duplicate preset id a/);
  });

  it("keeps sign-up off by default, with the spec's 40.44 and verification required, and refuses a grant of 0", () => {
    expect(parseConfig('channels: []\nmodels: []\n').signup).toBeUndefined();
    expect(SIGNUP_DEFAULTS).toEqual({ enabled: false, grant_usd: '40.44', require_email_verification: true, per_ip_per_hour: 5, per_email_per_hour: 3 });
    expect(parseConfig('signup: {enabled: true}\n').signup).toEqual({ ...SIGNUP_DEFAULTS, enabled: true });
    expect(() => parseConfig('signup: {enabled: true, grant_usd: "0.00"}\n')).toThrow(/signup.grant_usd: the trial grant must be above 0/);
    expect(loadConfig(undefined).config.signup?.enabled).toBe(true);
  });
});
