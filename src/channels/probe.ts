import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { CHAT_PROTOCOLS, type ChannelConfig, type ChatProtocol } from '../config/schema';
import { chatProtocol } from '../upstream/protocols/registry';
import { TASKS_PATH } from '../upstream/protocols/tasks';
import { scrubberOf } from '../upstream/scrub';
import { CallSignal, classify, statusFailure, upstreamAgent, upstreamTarget } from '../upstream/upstream-call';
import type { ChannelBoard } from './board';
import { channelDispatcher, shapedHeaders, shapedPath, withChannelQuery } from '../upstream/shaping';
import { failover } from './failover';
import { PROBE, type ChannelState } from './health';

/** Media protocols on the content-generation tasks API: probed with a GET of a task id nobody submitted. */
const TASK_PROTOCOLS = new Set(['videos', 'music', 'transcripts', 'avatars']);
/** Media protocols of OpenAI's API: probed with its model list. */
const OPENAI_MEDIA_PROTOCOLS = new Set(['images', 'speech', 'embeddings']);

export const PROBE_TIMEOUT_MS = 30_000;

interface ProbeRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/**
 * The neutral request a channel is probed with, shaped like its calls (headers, auth header, query; its
 * proxy is the dispatcher's): chat protocols their minimal call for the channel's first model (each
 * protocol's `probe` in src/upstream/protocols/registry.ts), read by its native adapter; media
 * protocols an authenticated request that starts no paid job — a task protocol `GET …/tasks/{unknown id}`
 * (a 404 means the key is fine), an OpenAI media API `GET /v1/models`. Null: nothing to probe with.
 */
export function probeRequest(channel: ChannelConfig): ProbeRequest | null {
  const bearer = () => shapedHeaders(channel, { authorization: `Bearer ${channel.api_key}` });
  if (TASK_PROTOCOLS.has(channel.protocol))
    return { method: 'GET', path: withChannelQuery(channel, `${TASKS_PATH}/${encodeURIComponent(`probe-${randomUUID()}`)}`), headers: bearer() };
  if (OPENAI_MEDIA_PROTOCOLS.has(channel.protocol)) return { method: 'GET', path: withChannelQuery(channel, '/v1/models'), headers: bearer() };
  if (!(CHAT_PROTOCOLS as readonly string[]).includes(channel.protocol)) return null;
  const { adapter, probe } = chatProtocol(channel.protocol as ChatProtocol);
  const upstreamModel = Array.isArray(channel.models) ? channel.models[0] : Object.values(channel.models)[0];
  if (upstreamModel === undefined) return null;
  const body = probe.body(upstreamModel);
  const info = adapter.inspect(body, probe.params?.(upstreamModel) ?? {});
  if ('invalid' in info) throw new Error(`probe of ${channel.protocol} is not a valid request: ${info.invalid}`);
  const request = adapter.upstream(body, info, upstreamModel);
  return {
    method: 'POST',
    path: shapedPath(channel, request.path, upstreamModel),
    headers: { 'content-type': 'application/json', ...shapedHeaders(channel, adapter.authHeaders(channel.api_key)) },
    body: JSON.stringify(request.body),
  };
}

export function isProbeable(channel: ChannelConfig): boolean {
  return probeRequest(channel) !== null;
}

/**
 * One active probe of a channel with its own credentials, its outcome recorded on the board as a probe's
 * (the failover rule reads it: a 401/403 refuses the credentials, a 5xx, a time-out or a failed connection
 * is a failure, any other answer means the channel works — a 404 for an unknown task id included).
 */
export async function probeChannel(
  board: ChannelBoard,
  channel: ChannelConfig,
  options: { dispatcher?: Dispatcher; timeoutMs?: number; parent?: CallSignal } = {},
): Promise<'ok' | 'failed' | 'skipped'> {
  const request = probeRequest(channel);
  if (!request) return 'skipped';
  const target = upstreamTarget(channel.base_url, request.path);
  const signal = new CallSignal(options.timeoutMs ?? PROBE_TIMEOUT_MS, options.parent);
  const started = performance.now();
  try {
    const response = await (channelDispatcher(channel) ?? options.dispatcher ?? upstreamAgent).request({
      origin: target.origin,
      path: target.path,
      method: request.method,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
      signal,
    });
    const latencyMs = Math.round(performance.now() - started);
    if (response.statusCode < 400) {
      await response.body.dump();
      board.record(channel.id, { kind: 'success', latencyMs }, PROBE);
      return 'ok';
    }
    const verdict = failover(await statusFailure(response.statusCode, response.headers, response.body, scrubberOf(channel)), signal, latencyMs);
    if (verdict.outcome) board.record(channel.id, verdict.outcome, PROBE);
    return verdict.outcome?.kind === 'success' ? 'ok' : 'failed';
  } catch (error) {
    const verdict = failover(classify(error, signal), signal, Math.round(performance.now() - started));
    if (verdict.outcome) board.record(channel.id, verdict.outcome, PROBE);
    return 'failed';
  } finally {
    signal.clear();
  }
}

/**
 * The edge of channel health: runs the probes its transitions ask for. Every channel is probed every
 * `intervalMs` (the spec's 6 hours); a probe asked for by calls (a 401/403, one account's run of failures)
 * at once, at most one per channel per `confirmIntervalMs` (a later one waits for its turn); a cooling or
 * credentials-disabled channel at its `probeAt` (the end of its cooldown, its credentials retry). One probe
 * per channel at a time; channels an operator disabled are never probed. `stop` ends every timer and probe.
 */
export class ChannelProbes {
  private interval: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** Every probe's parent: aborted by `stop`, so that a hanging upstream does not hold the shutdown. */
  private readonly lifetime = new CallSignal(1);
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Per channel: when the calls last had it probed, and the probe waiting for its turn. */
  private readonly asked = new Map<string, number>();
  private readonly waiting = new Map<string, NodeJS.Timeout>();
  /** Per channel: the timer of its next probe of its own (`probeAt`). */
  private readonly due = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private stopped = false;

  constructor(
    private readonly board: ChannelBoard,
    private readonly channels: () => readonly ChannelConfig[],
    private readonly onError: (error: unknown) => void,
    private readonly nowMs: () => number = Date.now,
  ) {
    // The lifetime signal's own time limit is not wanted: only `stop` ends it.
    this.lifetime.clear();
    board.runEffects((channelId, state, probe) => this.effect(channelId, state, probe));
    // States restored before (from the log, at start) may be due a probe already.
    for (const channel of channels()) this.effect(channel.id, board.state(channel.id), null);
  }

  /** Every channel probed every `intervalMs` (0: never); a reloaded config calls it again. */
  start(intervalMs: number): void {
    if (this.interval) clearInterval(this.interval);
    this.interval = null;
    if (intervalMs <= 0 || this.stopped) return;
    this.interval = setInterval(() => {
      if (this.running) return;
      this.running = this.probeAll().finally(() => (this.running = null));
    }, intervalMs);
    this.interval.unref();
  }

  async probeAll(): Promise<void> {
    for (const channel of this.channels()) {
      if (this.stopped) return;
      if (this.board.state(channel.id).disabledBy === 'operator') continue;
      await this.probe(channel.id);
    }
  }

  /** What a transition asks: a probe now (rate-limited), the next probe of its own at `state.probeAt`. */
  private effect(channelId: string, state: ChannelState, probe: 'now' | null): void {
    if (this.stopped) return;
    if (probe === 'now') this.confirm(channelId);
    const scheduled = this.due.get(channelId);
    if (scheduled?.at === state.probeAt) return;
    if (scheduled) clearTimeout(scheduled.timer);
    this.due.delete(channelId);
    if (state.probeAt === null) return;
    const timer = setTimeout(() => {
      this.due.delete(channelId);
      void this.probe(channelId);
    }, Math.max(0, state.probeAt - this.nowMs()));
    timer.unref();
    this.due.set(channelId, { at: state.probeAt, timer });
  }

  /** A probe the calls asked for: now, or once `confirmIntervalMs` has passed since the last one. */
  private confirm(channelId: string): void {
    if (this.waiting.has(channelId) || this.inFlight.has(channelId)) return;
    const now = this.nowMs();
    const last = this.asked.get(channelId);
    const wait = last === undefined ? 0 : last + this.board.healthPolicy.confirmIntervalMs - now;
    if (wait > 0) {
      const timer = setTimeout(() => {
        this.waiting.delete(channelId);
        this.confirm(channelId);
      }, wait);
      timer.unref();
      this.waiting.set(channelId, timer);
      return;
    }
    this.asked.set(channelId, now);
    void this.probe(channelId);
  }

  /** One probe of a channel of the config in force, unless one is under way (its answer is awaited then). */
  private probe(channelId: string): Promise<void> {
    const under = this.inFlight.get(channelId);
    if (under) return under;
    const channel = this.channels().find((c) => c.id === channelId);
    if (this.stopped || !channel || this.board.state(channelId).disabledBy === 'operator') return Promise.resolve();
    const run = probeChannel(this.board, channel, { parent: this.lifetime })
      .then(() => undefined, this.onError)
      .finally(() => this.inFlight.delete(channelId));
    this.inFlight.set(channelId, run);
    return run;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.interval) clearInterval(this.interval);
    this.interval = null;
    for (const timer of this.waiting.values()) clearTimeout(timer);
    this.waiting.clear();
    for (const { timer } of this.due.values()) clearTimeout(timer);
    this.due.clear();
    // A probe the shutdown cut says nothing of its channel (the failover rule ignores an aborted call).
    this.lifetime.abort();
    this.board.runEffects(null);
    await Promise.all([this.running, ...this.inFlight.values()]);
  }
}
