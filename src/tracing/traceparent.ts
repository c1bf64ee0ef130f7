import { createTraceState, isValidSpanId, isValidTraceId, type SpanContext } from '@opentelemetry/api';

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
 * headers read from a client and written to an upstream. Pure; an unusable header is no parent
 * (the request starts a trace of its own), as the recommendation says.
 */

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The caller's span as the parent of the request's, or null. */
export function parseTraceparent(traceparent: string | string[] | undefined, tracestate?: string | string[]): SpanContext | null {
  // Two traceparent headers make it ambiguous which trace the request belongs to.
  if (typeof traceparent !== 'string') return null;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match) return null;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  // Version ff is invalid; version 00 has exactly four fields; a later version may add fields after a dash.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (!isValidTraceId(traceId) || !isValidSpanId(spanId)) return null;
  const state = Array.isArray(tracestate) ? tracestate.join(',') : tracestate;
  return {
    traceId,
    spanId,
    // Only the sampled bit is defined for version 00; other bits are not passed on.
    traceFlags: parseInt(flags, 16) & 1,
    isRemote: true,
    ...(state !== undefined && state.trim() !== '' ? { traceState: createTraceState(state) } : {}),
  };
}

/** The `traceparent` naming `context` as the caller of the next hop. */
export function traceparentOf(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`;
}

/** The `tracestate` to send with it, if any. */
export function tracestateOf(context: SpanContext): string | undefined {
  const state = context.traceState?.serialize();
  return state === undefined || state === '' ? undefined : state;
}
