import { Counter, Gauge, type Registry } from 'prom-client';
import type { ChannelStatus, DisabledBy, StateChange } from '../channels/health';

/** This instance's channel board, as the metrics read it (src/channels/board.ts). */
export interface ChannelStateSource {
  state(channelId: string): { readonly status: ChannelStatus; readonly disabledBy: DisabledBy | null };
  onChange(listener: (channelId: string, change: StateChange) => void): void;
}

/** Every series a channel has, one of them 1: an alert finds `disabled` at 0 before it turns 1. */
const SERIES: readonly { status: ChannelStatus; disabled_by: DisabledBy | '' }[] = [
  { status: 'healthy', disabled_by: '' },
  { status: 'cooling', disabled_by: '' },
  { status: 'disabled', disabled_by: 'operator' },
  { status: 'disabled', disabled_by: 'credentials' },
];

/**
 * Channel health as this instance routes by it (src/channels/board.ts), so that an alert on a disabled or
 * cooling channel needs no admin API. The gauge is read from the board at each scrape: what another
 * instance recorded (an operator's disable, credentials refused; Postgres mode) shows once this instance
 * has followed it. The counter counts the changes this instance decided (its calls, its probes, an operator
 * through its admin API), not those it took over, so that a sum over instances counts each change once.
 */
export class ChannelStateMetrics {
  private readonly changes: Counter<'channel' | 'from' | 'to' | 'cause'>;

  /** `channelIds`: the channels of the config in force. */
  constructor(registry: Registry, source: ChannelStateSource, channelIds: () => readonly string[]) {
    const registers = [registry];
    const status: Gauge<'channel' | 'status' | 'disabled_by'> = new Gauge({
      name: 'gateway_channel_status',
      help: 'A channel\'s health as this instance sees it: 1 for its status (healthy, cooling, disabled with disabled_by operator or credentials), 0 for the others; the channels of the config in force.',
      labelNames: ['channel', 'status', 'disabled_by'],
      registers,
      collect() {
        // A channel a reload removed leaves no series behind.
        status.reset();
        for (const channel of channelIds()) {
          const now = source.state(channel);
          for (const series of SERIES) {
            const on = series.status === now.status && (series.status !== 'disabled' || series.disabled_by === (now.disabledBy ?? 'operator'));
            status.set({ channel, ...series }, on ? 1 : 0);
          }
        }
      },
    });
    this.changes = new Counter({
      name: 'gateway_channel_state_changes_total',
      help: 'Changes of a channel\'s status this instance decided, by channel, from, to and cause: failures (cooled), credentials (a probe was refused), probe (a probe succeeded), success (a call did), operator.',
      labelNames: ['channel', 'from', 'to', 'cause'],
      registers,
    });
    source.onChange((channel, change) => this.changed(channel, change));
  }

  /** A change of a channel's status (the board's change listener). */
  changed(channel: string, change: StateChange): void {
    this.changes.inc({ channel, from: change.from, to: change.to, cause: change.cause });
  }
}
