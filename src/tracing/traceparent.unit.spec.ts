import { TraceFlags } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { parseTraceparent, traceparentOf, tracestateOf } from './traceparent';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('parseTraceparent', () => {
  it('reads the W3C example as a remote, sampled parent, with its tracestate', () => {
    const parent = parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
    expect(parent).toMatchObject({ traceId: TRACE, spanId: SPAN, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    expect(parent!.traceState!.get('congo')).toBe('t61rcWkgMzE');
    expect(tracestateOf(parent!)).toBe('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
  });

  it('keeps only the sampled bit of the flags, and accepts a later version with more fields', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)!.traceFlags).toBe(TraceFlags.NONE);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)!.traceFlags).toBe(TraceFlags.SAMPLED);
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-whatever`)).toMatchObject({ traceId: TRACE, spanId: SPAN });
  });

  it('takes no parent from an unusable header: the request then starts its own trace', () => {
    for (const header of [
      undefined,
      '',
      'garbage',
      `00-${TRACE}-${SPAN}-01-extra`, // version 00 has exactly four fields
      `ff-${TRACE}-${SPAN}-01`, // version ff is invalid
      `00-${'0'.repeat(32)}-${SPAN}-01`, // all-zero trace id
      `00-${TRACE}-${'0'.repeat(16)}-01`, // all-zero parent id
      `00-${TRACE.toUpperCase()}-${SPAN}-01`, // upper-case hex
      `00-${TRACE.slice(1)}-${SPAN}-01`,
      [`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-01`], // two headers: ambiguous
    ])
      expect(parseTraceparent(header)).toBeNull();
  });
});

describe('traceparentOf', () => {
  it('writes version 00 with the sampled flag', () => {
    expect(traceparentOf({ traceId: TRACE, spanId: SPAN, traceFlags: TraceFlags.SAMPLED })).toBe(`00-${TRACE}-${SPAN}-01`);
    expect(traceparentOf({ traceId: TRACE, spanId: SPAN, traceFlags: TraceFlags.NONE })).toBe(`00-${TRACE}-${SPAN}-00`);
    expect(tracestateOf({ traceId: TRACE, spanId: SPAN, traceFlags: TraceFlags.NONE })).toBeUndefined();
  });
});
