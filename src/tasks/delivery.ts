import type { TaskState } from '../commands/task/decider';
import type { UpstreamTask } from '../upstream/protocols/tasks';

/** What a succeeded upstream task delivered, as the task's Succeed command takes it. */
export interface Delivery {
  /** The family's answer fields, kept on the task and shown by its polls. */
  readonly result: Record<string, unknown>;
  /** The billed quantity in the billing's unit (milliseconds, tokens, calls, …). */
  readonly units: number;
  /** What the call log shows (seconds, tokens, songs, …). */
  readonly unitCount: number;
  readonly resultUrls: readonly string[];
  readonly resultExpiresAt: number | null;
}

/** How a family reads a succeeded upstream task; `invalid` when the answer cannot be billed (the task fails, refunded). */
export type DeliveryOf = (task: UpstreamTask, state: TaskState, now: number) => Delivery | { readonly invalid: string };

/** Upstream links to results (presigned) live about a day: the spec's `expires_at` when the upstream gives none. */
export const UPSTREAM_LINK_TTL_S = 24 * 3600;
