import type { IncomingHttpHeaders } from 'node:http';

/**
 * The upstream wire protocols the simulator speaks (the config file's channel `protocol` names).
 * `videos`, `music`, `transcripts` and `avatars` share the content-generation tasks endpoint: a
 * submit's family is inferred from its body, a poll's from the task it names.
 */
export type Protocol =
  | 'chat-completions'
  | 'responses'
  | 'messages'
  | 'generate-content'
  | 'images'
  | 'videos'
  | 'music'
  | 'transcripts'
  | 'avatars'
  | 'speech';

/**
 * A named behaviour for one request, tensorzero "dummy provider" style.
 * Select it with `simulator.enqueue(...)` or with a `[[sim:<scenario>]]` marker in the last user text
 * (several markers, or several names separated by commas inside one marker, combine).
 */
export type Scenario =
  /** normal answer (useful to keep a queued slot for a request that must succeed) */
  | 'ok'
  /** answer with this HTTP status and the vendor's own error body (any 4xx/5xx; 429 adds retry-after: 1) */
  | `http_${number}`
  /** destroy the socket before any response byte */
  | 'reset_connection'
  /** wait this many milliseconds before sending the status line and headers */
  | `slow_first_byte:${number}`
  /** wait this many milliseconds between stream frames */
  | `slow_stream:${number}`
  /** send n frames, then destroy the socket (no terminator); non-streaming: half the body, then destroy */
  | `cut_stream_after:${number}`
  /** a non-streamed success (status 200) whose body is not JSON: the work was done (a task is created), its answer unreadable */
  | 'garbage_body'
  /** send n frames, then the protocol's in-stream error frame, then end (streams only) */
  | `error_frame_after:${number}`
  /** no usage anywhere in the answer (no usage chunk, no usage fields) */
  | 'no_usage'
  /** never answer (the socket stays open until the client gives up or the simulator closes) */
  | 'hang'
  /** the visible reply text is padded / cut to exactly n tokens (before the max-tokens cap) */
  | `reply_tokens:${number}`
  /** chat: answer with a call of the first offered tool (or of the named one) even if the text asks for none */
  | 'tool_call'
  | `tool_call:${string}`
  /** tasks: the task ends `failed` (with `error`) instead of `succeeded` */
  | 'task_failed'
  /** tasks: the task ends `expired` (with `error`) instead of `succeeded` */
  | 'task_expired'
  /** tasks: the task ends `cancelled` (with `error`), as if the upstream cancelled it */
  | 'task_cancelled'
  /** tasks: the task reaches its final state on the k-th GET (default 3) */
  | `task_polls:${number}`
  /** tasks: every GET carries `progress` (0 on the first, rising to 100 on success) */
  | 'task_progress'
  /** tasks (video, music): the delivered duration is ms / 1000 seconds */
  | `task_duration_ms:${number}`
  /** images: only min(k, requested) images come back */
  | `images_partial:${number}`;

/** The parsed, merged form of the scenarios applied to one request. */
export interface ScenarioSet {
  readonly names: readonly string[];
  status?: number;
  reset?: boolean;
  hang?: boolean;
  firstByteMs?: number;
  streamDelayMs?: number;
  cutAfter?: number;
  garbageBody?: boolean;
  errorFrameAfter?: number;
  noUsage?: boolean;
  replyTokens?: number;
  /** `tool_call[:name]`: answer with a tool call ('' = the first tool offered, or the ones the text names) */
  toolCall?: string;
  /** how a task ends when not `succeeded` (set at submit) */
  taskEnd?: 'failed' | 'expired' | 'cancelled';
  taskPolls?: number;
  taskProgress?: boolean;
  taskDurationMs?: number;
  imagesPartial?: number;
}

/** Restricts a queued scenario to the requests it matches (`Simulator.enqueueFor`). */
export interface ScenarioFilter {
  /** on the tasks endpoint: the family of the submit's body, or of the task a GET / DELETE names */
  readonly protocol?: Protocol;
  /** the model id as received (body `model`, or the generate-content path segment) */
  readonly model?: string;
  /** the API key as received */
  readonly apiKey?: string;
  /** a prefix of the request path, e.g. `/channel-a` when a channel's base_url is `${sim.url}/channel-a` */
  readonly pathPrefix?: string;
}

export interface UploadedFile {
  readonly field: string;
  readonly filename: string;
  readonly contentType: string;
  readonly size: number;
}

/** One request as the simulator received it. */
export interface RecordedRequest {
  /** 1-based arrival number since start / the last reset() */
  readonly seq: number;
  readonly method: string;
  /** path without the query string */
  readonly path: string;
  readonly query: Record<string, string>;
  readonly headers: IncomingHttpHeaders;
  /** parsed JSON body; for multipart `{...textFields, files: UploadedFile[]}`; undefined when empty */
  readonly body: unknown;
  /** the simulated protocol, when the path is one of the simulated endpoints */
  readonly protocol: Protocol | undefined;
  /** the model id as received (body `model` or the generate-content path segment) */
  readonly model: string | undefined;
  /** the API key as received (Authorization Bearer, x-api-key, x-goog-api-key or ?key=) */
  readonly apiKey: string | undefined;
  /** the scenario names applied to this request (queued first, then markers) */
  readonly scenarios: readonly string[];
  /** true when the request asked for a stream */
  readonly stream: boolean;
  /** Date.now() at arrival */
  readonly at: number;
}

export interface Simulator {
  /** `http://127.0.0.1:<port>` — a channel's base_url */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  /** Queue scenarios for the next requests, one entry per request in arrival order; an array entry combines several. */
  enqueue(...scenarios: Array<Scenario | readonly Scenario[]>): void;
  /** Like enqueue, but an entry is only taken by a request that matches the filter. */
  enqueueFor(filter: ScenarioFilter, ...scenarios: Array<Scenario | readonly Scenario[]>): void;
  /** Every request received since start / the last reset() (a live array). */
  readonly requests: RecordedRequest[];
  /** Refuse a key as a revoked one (as one containing `invalid`) on every request, until `revokeKey(key, false)`. */
  revokeKey(key: string, revoked?: boolean): void;
  /** Forget revoked keys, recorded requests, queued scenarios, prompt-cache memory, tasks, voices and id counters. */
  reset(): void;
}

export interface SimulatorOptions {
  /** default 0 (an ephemeral port) */
  readonly port?: number;
  /** default 127.0.0.1 */
  readonly host?: string;
}
