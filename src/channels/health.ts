import type { AttemptOutcome } from './failover';

/** How failures turn into cooldowns and when a channel is probed (config `channel_health`, docs/channels.md). */
export interface HealthPolicy {
  /** Consecutive failures after which a channel cools down (from two accounts or more; else a probe decides). */
  readonly failuresBeforeCooldown: number;
  /** The first cooldown; each further one in a row doubles it, up to `maxCooldownMs`. */
  readonly cooldownMs: number;
  readonly maxCooldownMs: number;
  /** The least time between two probes of one channel asked for by its calls (a 401/403, one account's run of failures). */
  readonly confirmIntervalMs: number;
  /** A channel whose credentials a probe refused is probed again after this, doubling per refusal up to the maximum. */
  readonly credentialsRetryMs: number;
  readonly maxCredentialsRetryMs: number;
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = {
  failuresBeforeCooldown: 3,
  cooldownMs: 30_000,
  maxCooldownMs: 30 * 60_000,
  confirmIntervalMs: 10_000,
  credentialsRetryMs: 15_000,
  maxCredentialsRetryMs: 5 * 60_000,
};

export type ChannelStatus = 'healthy' | 'cooling' | 'disabled';

/** Why a channel is disabled: a probe found its credentials refused, or an operator said so. */
export type DisabledBy = 'credentials' | 'operator';

/**
 * Who saw an outcome: a neutral probe with the channel's own credentials and a minimal request, or a call
 * of an account (null: the gateway's own work, e.g. a clip template lookup). What one account's requests
 * provoke (a WAF's 403 to a prompt, a crafted input that crashes a model) must not change what the others
 * are served: a call's outcome alone never disables or cools a channel; a probe confirms it.
 */
export type OutcomeSource = { readonly kind: 'probe' } | { readonly kind: 'call'; readonly account: string | null };

export const PROBE: OutcomeSource = { kind: 'probe' };
export const callOf = (account: string | null): OutcomeSource => ({ kind: 'call', account });

/** How many distinct accounts of a run of failures are kept: two are enough to know it is not one account's. */
export const RUN_ACCOUNTS_KEPT = 2;

export interface ChannelState {
  readonly status: ChannelStatus;
  /** Failures since the last success. */
  readonly failuresInRow: number;
  /** The distinct accounts whose calls failed in the current run (at most RUN_ACCOUNTS_KEPT). */
  readonly runAccounts: readonly string[];
  /** Cooldowns since the last success: the backoff's exponent. */
  readonly cooldowns: number;
  /** While cooling: until when (ms since the epoch); past it the channel is tried again (one failure cools it anew). */
  readonly coolingUntil: number | null;
  readonly disabledBy: DisabledBy | null;
  /** Probes in a row that found the credentials refused (or failed while so disabled): the retries' exponent. */
  readonly refusals: number;
  /** When the channel is probed again on its own (the end of a cooldown, a credentials retry); null: not. */
  readonly probeAt: number | null;
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
  runAccounts: [],
  cooldowns: 0,
  coolingUntil: null,
  disabledBy: null,
  refusals: 0,
  probeAt: null,
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

/** The wait before the next probe of a credentials-disabled channel after `refusals` refused probes (at least 1). */
export function credentialsRetryOf(policy: HealthPolicy, refusals: number): number {
  return Math.min(policy.maxCredentialsRetryMs, policy.credentialsRetryMs * 2 ** Math.min(Math.max(refusals - 1, 0), 30));
}

/** A transition: the state, its change of status (for the audit trail), and whether a probe is wanted now. */
export interface Transition {
  readonly state: ChannelState;
  readonly change: StateChange | null;
  /** `now`: a neutral probe should decide what the calls could not (the edge runs it, rate-limited). */
  readonly probe: 'now' | null;
}

const stay = (state: ChannelState): Transition => ({ state, change: null, probe: null });

/**
 * The state after one attempt's outcome, as its source saw it. A call's 401/403 may be the request's content
 * (a WAF, a provider's permission check on a file it names) as well as the channel's key: it asks for a
 * probe, and only a probe refused disables the channel. A call's failures count toward a cooldown when the
 * run comes from two accounts or more; a run of one account's (or the gateway's own) asks for a probe, whose
 * failure cools the channel and whose success ends the run. A cooling or credentials-disabled channel has a
 * `probeAt`. A channel an operator disabled stays so whatever happens.
 */
export function nextState(state: ChannelState, outcome: AttemptOutcome, nowMs: number, policy: HealthPolicy, source: OutcomeSource): Transition {
  if (state.disabledBy === 'operator') return stay(state);
  const probe = source.kind === 'probe';
  if (outcome.kind === 'success') {
    // A call that started before the disable says nothing of the key: only a probe brings the channel back.
    if (state.status === 'disabled' && !probe) return stay({ ...state, latencyMs: outcome.latencyMs, successes: state.successes + 1 });
    // Healthy as a fresh channel, with what the admin view counts kept.
    const next: ChannelState = {
      ...FRESH_STATE,
      lastError: state.lastError,
      lastErrorAt: state.lastErrorAt,
      failures: state.failures,
      latencyMs: outcome.latencyMs,
      successes: state.successes + 1,
    };
    const change: StateChange | null =
      state.status === 'healthy' ? null : { from: state.status, to: 'healthy', cause: probe ? 'probe' : 'success', reason: probe ? 'a probe succeeded' : 'an attempt succeeded', until: null };
    return { state: next, change, probe: null };
  }
  const failed = { ...state, lastError: outcome.message, lastErrorAt: nowMs, failures: state.failures + 1 };
  if (outcome.kind === 'credentials') {
    if (!probe) return { state: failed, change: null, probe: state.status === 'disabled' ? null : 'now' };
    const refusals = state.refusals + 1;
    const next: ChannelState = {
      ...failed,
      status: 'disabled',
      disabledBy: 'credentials',
      coolingUntil: null,
      failuresInRow: 0,
      runAccounts: [],
      refusals,
      probeAt: nowMs + credentialsRetryOf(policy, refusals),
    };
    return { state: next, change: state.status === 'disabled' ? null : { from: state.status, to: 'disabled', cause: 'credentials', reason: `a probe was refused: ${outcome.message}`, until: null }, probe: null };
  }
  if (state.status === 'disabled') {
    if (!probe) return stay(failed);
    // A retry that could not reach the upstream says nothing new of the key: retried later, backing off.
    const refusals = state.refusals + 1;
    return stay({ ...failed, refusals, probeAt: nowMs + credentialsRetryOf(policy, refusals) });
  }
  const latency = { ...failed, failuresInRow: state.failuresInRow + 1, latencyMs: outcome.latencyMs > 0 ? outcome.latencyMs : state.latencyMs };
  if (probe) return coolDown(state, latency, nowMs, policy, `a probe failed: ${outcome.message}`);
  const account = source.account;
  const runAccounts =
    account === null || latency.runAccounts.includes(account) || latency.runAccounts.length >= RUN_ACCOUNTS_KEPT ? latency.runAccounts : [...latency.runAccounts, account];
  const run = { ...latency, runAccounts };
  // Past its cooldown a channel is on trial: one failure is enough to act.
  const threshold = state.status === 'cooling' ? 1 : policy.failuresBeforeCooldown;
  if (run.failuresInRow < threshold) return stay(run);
  if (runAccounts.length >= 2)
    return coolDown(state, run, nowMs, policy, `${run.failuresInRow} failures in a row from ${runAccounts.length} accounts or more, the last: ${outcome.message}`);
  // One account's run (or the gateway's own): perhaps what its requests carry, so a probe decides.
  return { state: run, change: null, probe: 'now' };
}

/** Cooled for the backoff's next cooldown (twice the last in a row), probed again at its end. */
function coolDown(state: ChannelState, failed: ChannelState, nowMs: number, policy: HealthPolicy, reason: string): Transition {
  const until = nowMs + cooldownOf(policy, state.cooldowns);
  const next: ChannelState = { ...failed, status: 'cooling', runAccounts: [], cooldowns: state.cooldowns + 1, coolingUntil: until, probeAt: until };
  return { state: next, change: { from: state.status, to: 'cooling', cause: 'failures', reason, until }, probe: null };
}

/** An operator's word: `disable` takes the channel out of routing until `enable`, which makes it healthy. */
export function operatorState(state: ChannelState, action: 'enable' | 'disable'): { state: ChannelState; change: StateChange | null } {
  if (action === 'disable') {
    // Never probed while so: the operator's word holds whatever a probe would say.
    const next: ChannelState = { ...state, status: 'disabled', disabledBy: 'operator', coolingUntil: null, probeAt: null };
    return { state: next, change: state.disabledBy === 'operator' ? null : { from: state.status, to: 'disabled', cause: 'operator', reason: 'disabled by an operator', until: null } };
  }
  const next: ChannelState = { ...state, status: 'healthy', disabledBy: null, coolingUntil: null, failuresInRow: 0, runAccounts: [], cooldowns: 0, refusals: 0, probeAt: null };
  return { state: next, change: state.status === 'healthy' ? null : { from: state.status, to: 'healthy', cause: 'operator', reason: 'enabled by an operator', until: null } };
}

/** The policy of the config's `channel_health` (absent: the defaults). */
export function healthPolicyOf(
  config:
    | {
        failures_before_cooldown: number;
        cooldown_s: number;
        max_cooldown_s: number;
        confirm_probe_interval_s?: number;
        credentials_retry_s?: number;
        max_credentials_retry_s?: number;
      }
    | undefined,
): HealthPolicy {
  if (!config) return DEFAULT_HEALTH_POLICY;
  const seconds = (value: number | undefined, fallbackMs: number) => (value === undefined ? fallbackMs : value * 1000);
  return {
    failuresBeforeCooldown: config.failures_before_cooldown,
    cooldownMs: config.cooldown_s * 1000,
    maxCooldownMs: config.max_cooldown_s * 1000,
    confirmIntervalMs: seconds(config.confirm_probe_interval_s, DEFAULT_HEALTH_POLICY.confirmIntervalMs),
    credentialsRetryMs: seconds(config.credentials_retry_s, DEFAULT_HEALTH_POLICY.credentialsRetryMs),
    maxCredentialsRetryMs: seconds(config.max_credentials_retry_s, DEFAULT_HEALTH_POLICY.maxCredentialsRetryMs),
  };
}

/** Every 6 hours (the spec's health probe interval) unless `channel_health.probe_interval_s` says otherwise; 0: off. */
export const DEFAULT_PROBE_INTERVAL_MS = 6 * 3600 * 1000;

export function probeIntervalMsOf(config: { probe_interval_s?: number } | undefined): number {
  return config?.probe_interval_s === undefined ? DEFAULT_PROBE_INTERVAL_MS : config.probe_interval_s * 1000;
}
