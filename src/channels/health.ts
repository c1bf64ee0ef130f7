import type { AttemptOutcome } from './failover';

/** How failures turn into cooldowns (config `channel_health`, docs/channels.md). */
export interface HealthPolicy {
  /** Consecutive failures after which a channel cools down. */
  readonly failuresBeforeCooldown: number;
  /** The first cooldown; each further one in a row doubles it, up to `maxCooldownMs`. */
  readonly cooldownMs: number;
  readonly maxCooldownMs: number;
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = { failuresBeforeCooldown: 3, cooldownMs: 30_000, maxCooldownMs: 30 * 60_000 };

export type ChannelStatus = 'healthy' | 'cooling' | 'disabled';

/** Why a channel is disabled: its credentials were refused, or an operator said so. */
export type DisabledBy = 'credentials' | 'operator';

export interface ChannelState {
  readonly status: ChannelStatus;
  /** Failures since the last success. */
  readonly failuresInRow: number;
  /** Cooldowns since the last success: the backoff's exponent. */
  readonly cooldowns: number;
  /** While cooling: until when (ms since the epoch); past it the channel is tried again (one failure cools it anew). */
  readonly coolingUntil: number | null;
  readonly disabledBy: DisabledBy | null;
  readonly lastError: string | null;
  readonly lastErrorAt: number | null;
  /** The latest answered attempt's time to its answer (a stream: its headers). */
  readonly latencyMs: number | null;
  readonly successes: number;
  readonly failures: number;
}

export const FRESH_STATE: ChannelState = {
  status: 'healthy',
  failuresInRow: 0,
  cooldowns: 0,
  coolingUntil: null,
  disabledBy: null,
  lastError: null,
  lastErrorAt: null,
  latencyMs: null,
  successes: 0,
  failures: 0,
};

/** A change of a channel's status, as the audit trail records it. */
export interface StateChange {
  readonly from: ChannelStatus;
  readonly to: ChannelStatus;
  /** `failures`, `credentials`, `success`, `probe`, `operator`. */
  readonly cause: 'failures' | 'credentials' | 'success' | 'probe' | 'operator';
  readonly reason: string;
  /** While cooling: until when (ms). */
  readonly until: number | null;
}

/** Whether the router offers the channel now: healthy, or cooled down long enough to be tried again. */
export function isUsable(state: ChannelState, nowMs: number): boolean {
  if (state.status === 'healthy') return true;
  return state.status === 'cooling' && state.coolingUntil !== null && nowMs >= state.coolingUntil;
}

export function cooldownOf(policy: HealthPolicy, cooldowns: number): number {
  return Math.min(policy.maxCooldownMs, policy.cooldownMs * 2 ** Math.min(cooldowns, 30));
}

/** The state after one attempt's outcome (`probe`: an active probe's, which alone may bring back a channel
 * whose credentials were refused). A channel an operator disabled stays so whatever happens. */
export function nextState(
  state: ChannelState,
  outcome: AttemptOutcome,
  nowMs: number,
  policy: HealthPolicy,
  probe = false,
): { state: ChannelState; change: StateChange | null } {
  if (state.disabledBy === 'operator') return { state, change: null };
  if (outcome.kind === 'success') {
    const next: ChannelState = { ...state, status: 'healthy', failuresInRow: 0, cooldowns: 0, coolingUntil: null, disabledBy: null, latencyMs: outcome.latencyMs, successes: state.successes + 1 };
    if (state.status === 'disabled' && !probe) return { state: { ...state, latencyMs: outcome.latencyMs, successes: state.successes + 1 }, change: null };
    const change: StateChange | null =
      state.status === 'healthy' ? null : { from: state.status, to: 'healthy', cause: probe ? 'probe' : 'success', reason: probe ? 'a probe succeeded' : 'an attempt succeeded', until: null };
    return { state: next, change };
  }
  const failed = { ...state, lastError: outcome.message, lastErrorAt: nowMs, failures: state.failures + 1, failuresInRow: state.failuresInRow + 1 };
  if (outcome.kind === 'credentials') {
    const next: ChannelState = { ...failed, status: 'disabled', disabledBy: 'credentials', coolingUntil: null };
    return { state: next, change: state.status === 'disabled' ? null : { from: state.status, to: 'disabled', cause: 'credentials', reason: outcome.message, until: null } };
  }
  if (state.status === 'disabled') return { state: failed, change: null };
  const latency = { ...failed, latencyMs: outcome.latencyMs > 0 ? outcome.latencyMs : state.latencyMs };
  // Past its cooldown a channel is on trial: one failure cools it again, for twice as long.
  const onTrial = state.status === 'cooling';
  if (!onTrial && latency.failuresInRow < policy.failuresBeforeCooldown) return { state: latency, change: null };
  const until = nowMs + cooldownOf(policy, state.cooldowns);
  const next: ChannelState = { ...latency, status: 'cooling', cooldowns: state.cooldowns + 1, coolingUntil: until };
  return {
    state: next,
    change: { from: state.status, to: 'cooling', cause: 'failures', reason: `${latency.failuresInRow} failures in a row, the last: ${outcome.message}`, until },
  };
}

/** An operator's word: `disable` takes the channel out of routing until `enable`, which makes it healthy. */
export function operatorState(state: ChannelState, action: 'enable' | 'disable'): { state: ChannelState; change: StateChange | null } {
  if (action === 'disable') {
    const next: ChannelState = { ...state, status: 'disabled', disabledBy: 'operator', coolingUntil: null };
    return { state: next, change: state.disabledBy === 'operator' ? null : { from: state.status, to: 'disabled', cause: 'operator', reason: 'disabled by an operator', until: null } };
  }
  const next: ChannelState = { ...state, status: 'healthy', disabledBy: null, coolingUntil: null, failuresInRow: 0, cooldowns: 0 };
  return { state: next, change: state.status === 'healthy' ? null : { from: state.status, to: 'healthy', cause: 'operator', reason: 'enabled by an operator', until: null } };
}

/** The policy of the config's `channel_health` (absent: the defaults). */
export function healthPolicyOf(config: { failures_before_cooldown: number; cooldown_s: number; max_cooldown_s: number } | undefined): HealthPolicy {
  if (!config) return DEFAULT_HEALTH_POLICY;
  return { failuresBeforeCooldown: config.failures_before_cooldown, cooldownMs: config.cooldown_s * 1000, maxCooldownMs: config.max_cooldown_s * 1000 };
}

/** Every 6 hours (the spec's health probe interval) unless `channel_health.probe_interval_s` says otherwise; 0: off. */
export const DEFAULT_PROBE_INTERVAL_MS = 6 * 3600 * 1000;

export function probeIntervalMsOf(config: { probe_interval_s?: number } | undefined): number {
  return config?.probe_interval_s === undefined ? DEFAULT_PROBE_INTERVAL_MS : config.probe_interval_s * 1000;
}
