import type { Failure } from '../upstream/upstream-call';
import { failover, type AttemptOutcome, type CallSignalState, type Verdict } from './failover';
import {
  DEFAULT_HEALTH_POLICY,
  FRESH_STATE,
  callOf,
  isUsable,
  nextState,
  operatorState,
  type ChannelState,
  type HealthPolicy,
  type OutcomeSource,
  type StateChange,
  type Transition,
} from './health';

/** Told of every change of a channel's status (the audit events, logs). */
export type ChangeListener = (channelId: string, change: StateChange, state: ChannelState) => void;

/** Runs what a transition asks of the edge: a probe now, the next one at `state.probeAt` (src/channels/probe.ts). */
export type EffectRunner = (channelId: string, state: ChannelState, probe: 'now' | null) => void;

/**
 * The live health of every channel of this instance: what its attempts and probes said, its cooldown, and
 * whether it is disabled. Kept by channel id, so a reloaded config keeps the state of the channels it keeps.
 * The transitions are pure (health.ts); the probes they ask for are run by the effect runner, if any.
 */
export class ChannelBoard {
  private readonly states = new Map<string, ChannelState>();
  private readonly listeners: ChangeListener[] = [];
  private effects: EffectRunner | null = null;

  constructor(
    private policy: HealthPolicy = DEFAULT_HEALTH_POLICY,
    private readonly nowMs: () => number = Date.now,
  ) {}

  setPolicy(policy: HealthPolicy): void {
    this.policy = policy;
  }

  get healthPolicy(): HealthPolicy {
    return this.policy;
  }

  onChange(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  /** The one runner of the transitions' effects (the gateway's ChannelProbes); null: none (nothing probed). */
  runEffects(runner: EffectRunner | null): void {
    this.effects = runner;
  }

  state(channelId: string): ChannelState {
    return this.states.get(channelId) ?? FRESH_STATE;
  }

  usable(channelId: string): boolean {
    return isUsable(this.state(channelId), this.nowMs());
  }

  /** An attempt's outcome, as its source saw it (a probe, or a call of an account). */
  record(channelId: string, outcome: AttemptOutcome, source: OutcomeSource): Transition {
    const result = nextState(this.state(channelId), outcome, this.nowMs(), this.policy, source);
    this.apply(channelId, result);
    return result;
  }

  /** The failover decision for a failed attempt of a call of `account` (null: the gateway's own), its outcome recorded on the channel. */
  failed(channelId: string, failure: Failure, call: CallSignalState, latencyMs: number, account: string | null): Verdict {
    const verdict = failover(failure, call, latencyMs);
    if (verdict.outcome) this.record(channelId, verdict.outcome, callOf(account));
    return verdict;
  }

  operator(channelId: string, action: 'enable' | 'disable'): StateChange | null {
    const result = operatorState(this.state(channelId), action);
    this.apply(channelId, { ...result, probe: null });
    return result.change;
  }

  /** Restores a state from the audit trail or another instance's change (silently: no change told). */
  restore(channelId: string, state: ChannelState): void {
    this.states.set(channelId, state);
    this.effects?.(channelId, state, null);
  }

  private apply(channelId: string, result: Transition) {
    this.states.set(channelId, result.state);
    if (result.change) for (const listener of this.listeners) listener(channelId, result.change, result.state);
    this.effects?.(channelId, result.state, result.probe);
  }
}
