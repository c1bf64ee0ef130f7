import { expect } from 'vitest';
import { randomBytes } from 'node:crypto';
import { ConfigSchema, type GatewayConfig, type ModelConfig } from '../../src/config/schema';
import { SPEC_VIDEO_SKUS } from '../../src/config/video-kind';
import type { Simulator } from '../../src/simulator';
import { startSimulatedGateway, type SimulatedGateway, type TestGatewayOptions } from '../support/gateway';

/** A media channel on the simulator under its own path prefix and key, serving `models` as `<model>-upstream`. */
export function mediaChannel(sim: Simulator, id: string, protocol: string, models: readonly string[], priority = 0) {
  return {
    id,
    protocol: protocol as GatewayConfig['channels'][number]['protocol'],
    base_url: `${sim.url}/${id}`,
    api_key: `key-${id}`,
    group: 'default',
    priority,
    weight: 1,
    models: Object.fromEntries(models.map((m) => [m, `${m}-upstream`])),
    tools: [] as string[],
  };
}

/** A catalogue entry with the schema's defaults. */
export function mediaModel(fields: Partial<ModelConfig> & Pick<ModelConfig, 'id' | 'kind' | 'price'>): ModelConfig {
  return { owned_by: 'test', aliases: [], callable: true, endpoint_type: null, capabilities: [], ...fields } as ModelConfig;
}

/** Fast background work for tests: upstream tasks polled every 40 ms, overdue ones swept every 100 ms. */
export const FAST_TASKS: Omit<TestGatewayOptions, 'config'> = {
  taskPoller: { pollEveryMs: 40, requestTimeoutMs: 5_000, submitGraceS: 300 },
  taskSweepEveryMs: 100,
};

/**
 * How a spec's config names the kinds of the spec's dh-* and clip-* SKU ids: `explicit`, with the gateway's
 * own `video.kind` on each (as the specs write them), or `design`, exactly as DESIGN.md writes them
 * (`kind: video` and nothing more), read through the config file's schema. The `*.design.int.spec.ts`
 * files run the digital-human and smart-clip specs again in the `design` style.
 */
export type SkuConfigStyle = 'explicit' | 'design';
let skuConfigStyle: SkuConfigStyle = 'explicit';

/** Every harness this test file starts from now on writes its config in `style`. */
export function writeSkuConfigAs(style: SkuConfigStyle): void {
  skuConfigStyle = style;
}

/** The config as DESIGN.md writes it: no `video.kind` on a spec-named SKU id; parsed as a config file is. */
export function asDesignWrites(config: GatewayConfig): GatewayConfig {
  const models = config.models.map((model) => {
    if (SPEC_VIDEO_SKUS[model.id] === undefined || model.video === undefined) return model;
    const { kind: _kind, ...rules } = model.video;
    return { ...model, video: rules };
  });
  return ConfigSchema.parse({ ...config, models });
}

export async function startTaskHarness(config: (sim: Simulator) => GatewayConfig, options: Omit<TestGatewayOptions, 'config'> = {}): Promise<SimulatedGateway> {
  // With REDIS_URL the jobs run on BullMQ (under a prefix of this harness's own), as in production.
  const redis = process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL, rateLimits: { keyPrefix: `gwtest:rl:${randomBytes(4).toString('hex')}:` } } : {};
  const style = skuConfigStyle;
  return startSimulatedGateway((sim) => (style === 'design' ? asDesignWrites(config(sim)) : config(sim)), { ...FAST_TASKS, ...redis, jobsPrefix: `gwtest:${randomBytes(4).toString('hex')}`, ...options });
}

export function api(h: SimulatedGateway) {
  const request = (method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${h.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  return {
    post: (path: string, key: string, body: unknown, headers: Record<string, string> = {}) => request('POST', path, key, body, headers),
    get: (path: string, key: string) => request('GET', path, key),
    /** Polls `path` until `done(body)` holds (the poller runs every 40 ms in tests). */
    async until(path: string, key: string, done: (body: Record<string, unknown>, status: number) => boolean, timeoutMs = 15_000): Promise<Record<string, unknown>> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const response = await request('GET', path, key);
        const body = (await response.json()) as Record<string, unknown>;
        if (response.status === 200 && done(body, response.status)) return body;
        if (Date.now() > deadline) expect.fail(`${path} never reached the expected state; last: ${response.status} ${JSON.stringify(body)}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
}

/** The account's call-log rows once every queued command and projection has caught up. */
export async function logRows(h: SimulatedGateway, accountId: string): Promise<Array<Record<string, unknown>>> {
  await h.t.gateway.ledger.idle();
  await h.t.gateway.tasks.idle();
  await h.t.gateway.runner.catchUpToHead();
  return ((await h.t.admin('GET', `/accounts/${accountId}/logs`)).json() as { data: Array<Record<string, unknown>> }).data;
}

/** The account's ledger events (admin API), in order. */
export async function ledgerEvents(h: SimulatedGateway, accountId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  await h.t.gateway.ledger.idle();
  await h.t.gateway.runner.catchUpToHead();
  const body = (await h.t.admin('GET', `/accounts/${accountId}/ledger`)).json() as { data?: unknown[]; events?: unknown[] };
  return (body.data ?? body.events ?? []) as Array<{ type: string; data: Record<string, unknown> }>;
}
