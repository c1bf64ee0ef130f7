import { UPSTREAM_LINK_TTL_S, type DeliveryOf } from '../delivery';

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The longest video a request may ask for (`duration`), and so the longest one is billed for. */
export const MAX_VIDEO_SECONDS = 3600;

/**
 * A succeeded video task: billed per delivered second (by the millisecond of `duration`) or, for a
 * token-billed task, per `usage.completion_tokens`; what the upstream leaves out is billed at what the
 * reservation stands for. The result keeps the spec's succeeded fields: `content` (with `last_frame_url`
 * when the upstream gives one), `video_url`, `expires_at`, `duration` (rounded), `duration_sec`, and
 * `framespersecond`, `usage`, `output_files` only when the upstream reports them.
 */
export const videoDelivery: DeliveryOf = (task, state, now) => {
  const content = task.content ?? {};
  const videoUrl = text(content.video_url);
  if (!videoUrl) return { invalid: 'the upstream reported success without a video_url' };
  const lastFrame = text(content.last_frame_url);
  const outputFiles = Array.isArray(content.output_files) ? content.output_files : undefined;
  const seconds = task.duration;
  const milliseconds = seconds === undefined ? null : Math.round(seconds * 1000);
  const tokens = task.usage?.completion_tokens;
  const byTokens = state.billing.unit === 'token';
  const delivered = byTokens ? (tokens ?? state.basis) : (milliseconds ?? state.basis);
  // A video asked for without a duration is billed on its length past its 12 s reservation (the
  // spec's rule), but an upstream's length is believed only up to the longest a request may ask for (issue 31).
  const units = state.billing.cap || byTokens ? delivered : Math.min(delivered, MAX_VIDEO_SECONDS * 1000);
  const expiresAt = now + UPSTREAM_LINK_TTL_S;
  // Billed at the reservation's basis when the upstream does not say: shown as that length too.
  const shown = seconds ?? (byTokens ? undefined : units / 1000);
  const result: Record<string, unknown> = {
    content: { video_url: videoUrl, ...(lastFrame ? { last_frame_url: lastFrame } : {}) },
    ...(task.framespersecond !== undefined ? { framespersecond: task.framespersecond } : {}),
    ...(task.usage ? { usage: { completion_tokens: task.usage.completion_tokens, total_tokens: task.usage.total_tokens ?? task.usage.completion_tokens } } : {}),
    video_url: videoUrl,
    expires_at: expiresAt,
    ...(shown !== undefined ? { duration: Math.round(shown), duration_sec: shown } : {}),
    ...(outputFiles ? { output_files: outputFiles } : {}),
  };
  const urls = [videoUrl, ...(lastFrame ? [lastFrame] : [])];
  return {
    result,
    units,
    unitCount: byTokens ? units : Math.round(units / 1000),
    resultUrls: urls,
    resultExpiresAt: expiresAt,
  };
};
