// The task poller's settings, apart from the poller so that reading TASK_POLL_INTERVAL (src/runtime/settings.ts,
// every CLI command) loads none of the upstream code.

export interface PollerSettings {
  /** How often an upstream task is asked about (the spec asks clients for 5-10 s). */
  readonly pollEveryMs: number;
  /** One poll's time limit. */
  readonly requestTimeoutMs: number;
  /** A task created but never recorded as accepted (its submitting request died) is failed this long after its creation. */
  readonly submitGraceS: number;
}

export const POLLER_SETTINGS: PollerSettings = { pollEveryMs: 5_000, requestTimeoutMs: 30_000, submitGraceS: 300 };
