import { createHash } from 'node:crypto';
import type { HostedOutputs } from '../../../objects/hosted';
import { errorBody, GatewayError } from '../../errors';

/**
 * The final answer of an async image task, kept so that its polls return the bytes a synchronous call
 * would have returned. Small answers without image bytes live in the task's ending event; the others
 * (b64_json images: up to hundreds of MB, and bytes that must not outlive the 24-hour retention in an
 * append-only log) go to the hosted-outputs object store for 24 hours, the event holding their key,
 * size and SHA-256.
 */
export type StoredAnswer =
  | { readonly status: number; readonly content_type: string; readonly body: string }
  | { readonly status: number; readonly content_type: string; readonly key: string; readonly size: number; readonly sha256: string; readonly expires_at: number };

/** Larger answers are never kept in an event (a url answer of 10 images is about 2 KB). */
export const INLINE_ANSWER_BYTES = 64 * 1024;

const JSON_TYPE = 'application/json';

export interface AnswerToKeep {
  readonly status: number;
  readonly body: string;
  /** The answer carries image bytes (b64_json): never kept in the log. */
  readonly carriesImages: boolean;
}

export interface AnswerOwner {
  readonly accountId: string;
  readonly taskId: string;
  readonly now: number;
}

export async function keepAnswer(hosted: HostedOutputs, owner: AnswerOwner, answer: AnswerToKeep): Promise<StoredAnswer> {
  const bytes = Buffer.from(answer.body, 'utf8');
  if (!answer.carriesImages && bytes.length <= INLINE_ANSWER_BYTES) return { status: answer.status, content_type: JSON_TYPE, body: answer.body };
  // The task's own key: a run that stores again (it never does) would replace, not add.
  const link = await hosted.put({ accountId: owner.accountId, taskId: owner.taskId, name: 'answer.json', bytes, contentType: JSON_TYPE, now: owner.now, baseUrl: '' });
  return {
    status: answer.status,
    content_type: JSON_TYPE,
    key: link.key,
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    expires_at: link.expiresAt,
  };
}

/** A kept answer as a poll sends it. */
export interface FinalAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string | Buffer;
}

/** Whether a task's `result` is a kept answer (tasks of other shapes have none). */
export function isStoredAnswer(value: unknown): value is StoredAnswer {
  const v = value as Partial<Record<string, unknown>> | null;
  return !!v && typeof v.status === 'number' && typeof v.content_type === 'string' && (typeof v.body === 'string' || typeof v.key === 'string');
}

/**
 * The kept answer's bytes. An answer in the object store past its 24 hours is gone: 410 `result_expired`
 * (its image bytes were deleted with it; the task stays in the list). Bytes that are not the ones kept
 * (size or digest) are a fault of the store: thrown, a 500.
 */
export async function loadAnswer(hosted: HostedOutputs, stored: StoredAnswer, now: number): Promise<FinalAnswer> {
  if ('body' in stored) return { status: stored.status, contentType: stored.content_type, body: stored.body };
  const object = await hosted.read(stored.key, now);
  if (!object) {
    const error = new GatewayError(
      'result_expired',
      `The answer of this task was kept for 24 hours, until ${new Date(stored.expires_at * 1000).toISOString()}, and has been deleted with its images. Submit the request again.`,
    );
    return { status: error.status, contentType: JSON_TYPE, body: JSON.stringify(errorBody('chat', error)) };
  }
  const digest = createHash('sha256').update(object.bytes).digest('hex');
  if (object.bytes.length !== stored.size || digest !== stored.sha256)
    throw new Error(`the kept answer ${stored.key} is not the one stored (${object.bytes.length} bytes, sha256 ${digest}; expected ${stored.size}, ${stored.sha256})`);
  return { status: stored.status, contentType: stored.content_type, body: object.bytes };
}

/**
 * The final answer of a task that ended without one kept: its run never reached an answer. The task
 * past its 280 s (the sweep expired it) is what a synchronous call past its ladder gets, 504
 * `upstream_timeout`; a run cut by a shutdown or a restart is 503 `gateway_interrupted`; a run that
 * failed in the gateway is 500 `internal_error`. The message is the task's own.
 */
export function unkeptAnswer(errorCode: string | null, message: string | null): FinalAnswer {
  const code = errorCode === 'task_expired' || errorCode === 'upstream_timeout' ? 'upstream_timeout' : errorCode === 'gateway_interrupted' ? 'gateway_interrupted' : 'internal_error';
  const error = new GatewayError(code, message ?? 'the task ended without an answer; nothing was charged');
  return { status: error.status, contentType: JSON_TYPE, body: JSON.stringify(errorBody('chat', error)) };
}
