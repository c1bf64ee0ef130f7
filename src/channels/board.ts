import type { Failure } from '../upstream/upstream-call';
import { failover, type AttemptOutcome, type CallState, type Verdict } from './failover';
import { DEFAULT_HEALTH_POLICY, FRESH_STATE, isUsable, nextState, operatorState, type ChannelState, type HealthPolicy, type StateChange } from './health';

/** Told of every change of a channel's status (the audit events, logs). */
export type ChangeListener = (channelId: string, change: StateChange, state: ChannelState) => void;

/**
 * The live health of every channel of this instance: what its attempts and probes said, its cooldown, and
 * whether it is disabled. Kept by channel id, so a reloaded config keeps the state of the channels it keeps.
 */
export class ChannelBoard {
  private readonly states = new Map<string, ChannelState>();
  private readonly listeners: ChangeListener[] = [];

  constructor(
    private policy: HealthPolicy = DEFAULT_HEALTH_POLICY,
    private readonly nowMs: () => number = Date.now,
  ) {}

  setPolicy(policy: HealthPolicy): void {
    this.policy = policy;
  }

  onChange(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  state(channelId: string): ChannelState {
    return this.states.get(channelId) ?? FRESH_STATE;
  }

  usable(channelId: string): boolean {
    return isUsable(this.state(channelId), this.nowMs());
  }

  /** An attempt's outcome (`probe`: an active probe's). */
  record(channelId: string, outcome: AttemptOutcome, probe = false): void {
    this.apply(channelId, nextState(this.state(channelId), outcome, this.nowMs(), this.policy, probe));
  }

  /** The failover decision for a failed attempt, its outcome recorded on the channel. */
  failed(channelId: string, failure: Failure, call: CallState, latencyMs: number): Verdict {
    const verdict = failover(failure, call, latencyMs);
    if (verdict.outcome) this.record(channelId, verdict.outcome);
    return verdict;
  }

  operator(channelId: string, action: 'enable' | 'disable'): StateChange | null {
    const result = operatorState(this.state(channelId), action);
    this.apply(channelId, result);
    return result.change;
  }

  /** Restores a state from the audit trail (a restart keeps disabled channels disabled). */
  restore(channelId: string, state: ChannelState): void {
    this.states.set(channelId, state);
  }

  private apply(channelId: string, result: { state: ChannelState; change: StateChange | null }) {
    this.states.set(channelId, result.state);
    if (result.change) for (const listener of this.listeners) listener(channelId, result.change, result.state);
  }
}
