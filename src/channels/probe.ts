import type { Dispatcher } from 'undici';
import type { ChannelConfig, ChatProtocol } from '../config/schema';
import type { ProtocolAdapter } from '../upstream/contract';
import { chatCompletions } from '../upstream/protocols/chat-completions';
import { generateContent } from '../upstream/protocols/generate-content';
import { messages } from '../upstream/protocols/messages';
import { responses } from '../upstream/protocols/responses';
import { CallSignal, classify, statusFailure, upstreamAgent, upstreamTarget } from '../upstream/upstream-call';
import type { ChannelBoard } from './board';
import { channelDispatcher, shapedHeaders, shapedPath } from './shaping';
import { failover } from './failover';

/** The smallest request of each chat protocol: one short user turn, a one- or few-token answer. */
const MINIMAL: Readonly<Record<ChatProtocol, { adapter: ProtocolAdapter; body: (model: string) => unknown; params?: (model: string) => { model: string } }>> = {
  'chat-completions': { adapter: chatCompletions, body: (model) => ({ model, messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 }) },
  messages: { adapter: messages, body: (model) => ({ model, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] }) },
  responses: { adapter: responses, body: (model) => ({ model, input: 'ping', max_output_tokens: 16 }) },
  'generate-content': {
    adapter: generateContent,
    body: () => ({ contents: [{ role: 'user', parts: [{ text: 'ping' }] }], generationConfig: { maxOutputTokens: 1 } }),
    params: (model) => ({ model }),
  },
};

export const PROBE_TIMEOUT_MS = 30_000;

export function isProbeable(channel: ChannelConfig): boolean {
  return channel.protocol in MINIMAL;
}

/**
 * One active probe of a chat channel: a minimal request of its protocol for its first model, its outcome
 * recorded on the board as a probe's (a success brings back a cooling or credentials-disabled channel).
 * Media channels are not probed (a probe there would start a paid job): their health is passive only.
 */
export async function probeChannel(
  board: ChannelBoard,
  channel: ChannelConfig,
  options: { dispatcher?: Dispatcher; timeoutMs?: number; parent?: CallSignal } = {},
): Promise<'ok' | 'failed' | 'skipped'> {
  const minimal = MINIMAL[channel.protocol as ChatProtocol];
  const upstreamModel = Array.isArray(channel.models) ? channel.models[0] : Object.values(channel.models)[0];
  if (!minimal || upstreamModel === undefined) return 'skipped';
  const body = minimal.body(upstreamModel);
  const info = minimal.adapter.inspect(body, minimal.params?.(upstreamModel) ?? {});
  if ('invalid' in info) throw new Error(`probe of ${channel.protocol} is not a valid request: ${info.invalid}`);
  const request = minimal.adapter.upstream(body, info, upstreamModel);
  const target = upstreamTarget(channel.base_url, shapedPath(channel, request.path, upstreamModel));
  const signal = new CallSignal(options.timeoutMs ?? PROBE_TIMEOUT_MS, options.parent);
  const started = performance.now();
  try {
    const response = await (channelDispatcher(channel) ?? options.dispatcher ?? upstreamAgent).request({
      origin: target.origin,
      path: target.path,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...shapedHeaders(channel, minimal.adapter.authHeaders(channel.api_key)) },
      body: JSON.stringify(request.body),
      signal,
    });
    const latencyMs = Math.round(performance.now() - started);
    if (response.statusCode < 400) {
      await response.body.dump();
      board.record(channel.id, { kind: 'success', latencyMs }, true);
      return 'ok';
    }
    const verdict = failover(await statusFailure(response.statusCode, response.headers, response.body), signal, latencyMs);
    if (verdict.outcome) board.record(channel.id, verdict.outcome, true);
    return verdict.outcome?.kind === 'success' ? 'ok' : 'failed';
  } catch (error) {
    const verdict = failover(classify(error, signal), signal, Math.round(performance.now() - started));
    if (verdict.outcome) board.record(channel.id, verdict.outcome, true);
    return 'failed';
  } finally {
    signal.clear();
  }
}

/** Every chat channel probed every `intervalMs`, one after the other; `stop` ends the loop. */
export class ChannelProbes {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** The run under way: aborted by `stop`, so that a hanging upstream does not hold the shutdown. */
  private run: CallSignal | null = null;

  constructor(
    private readonly board: ChannelBoard,
    private readonly channels: () => readonly ChannelConfig[],
    private readonly onError: (error: unknown) => void,
  ) {}

  start(intervalMs: number): void {
    this.stop();
    if (intervalMs <= 0) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.probeAll().finally(() => (this.running = null));
    }, intervalMs);
    this.timer.unref();
  }

  async probeAll(): Promise<void> {
    const run = new CallSignal(24 * 3600 * 1000);
    this.run = run;
    try {
      for (const channel of this.channels()) {
        if (run.aborted) return;
        if (!isProbeable(channel) || this.board.state(channel.id).disabledBy === 'operator') continue;
        await probeChannel(this.board, channel, { parent: run }).catch(this.onError);
      }
    } finally {
      run.clear();
      this.run = null;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // A probe the shutdown cut says nothing of its channel (the failover rule ignores an aborted call).
    this.run?.abort();
    await this.running;
  }
}
