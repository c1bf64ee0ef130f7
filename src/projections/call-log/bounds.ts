import type { CallRecord } from '../../events/catalog';

/**
 * What a call record keeps of each text, in UTF-16 code units (JavaScript string length).
 * A client (the model it names) and an upstream (its error message, its links) decide these
 * texts, and each call writes them twice, in its event and its call-log row: unbounded, three
 * requests naming a 20 MB model grew the database by half a gigabyte and the admin logs page
 * answered hundreds of megabytes. They are informational, so a longer text is cut, not refused.
 */
export const CALL_TEXT_LIMITS = {
  model: 256,
  endpoint: 64,
  error_code: 64,
  error_message: 2000,
  unit_type: 32,
  task_id: 256,
  channel_id: 256,
  /** Each result link; a cut link no longer works, but one this long is not a real link either. */
  result_url: 4096,
  /** Links kept per call (the image endpoints give at most 10). */
  result_urls: 16,
} as const;

/** The mark that ends a cut text. */
export const CUT_MARK = '…';

/** `text` if it fits in `max` code units, else its start and `…`, `max` code units in all. A cut
 * never splits a surrogate pair (half of one is not storable in Postgres' jsonb). */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - CUT_MARK.length;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(0, end) + CUT_MARK;
}

const clipNullable = (text: string | null, max: number) => (text === null ? null : clipText(text, max));

/** The record with every text within CALL_TEXT_LIMITS (the same object when all fit). */
export function boundedCall(call: CallRecord): CallRecord {
  const L = CALL_TEXT_LIMITS;
  const fits =
    call.model.length <= L.model &&
    call.endpoint.length <= L.endpoint &&
    (call.error_code?.length ?? 0) <= L.error_code &&
    (call.error_message?.length ?? 0) <= L.error_message &&
    (call.unit_type?.length ?? 0) <= L.unit_type &&
    (call.task_id?.length ?? 0) <= L.task_id &&
    (call.channel_id?.length ?? 0) <= L.channel_id &&
    call.result_urls.length <= L.result_urls &&
    call.result_urls.every((url) => url.length <= L.result_url);
  if (fits) return call;
  return {
    ...call,
    model: clipText(call.model, L.model),
    endpoint: clipText(call.endpoint, L.endpoint),
    error_code: clipNullable(call.error_code, L.error_code),
    error_message: clipNullable(call.error_message, L.error_message),
    unit_type: clipNullable(call.unit_type, L.unit_type),
    task_id: clipNullable(call.task_id, L.task_id),
    channel_id: clipNullable(call.channel_id, L.channel_id),
    result_urls: call.result_urls.slice(0, L.result_urls).map((url) => clipText(url, L.result_url)),
  };
}
