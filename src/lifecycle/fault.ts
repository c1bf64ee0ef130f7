/**
 * Fault injection for crash tests: with `GATEWAY_FAULT=<point>` the process kills itself
 * (SIGKILL: no exit handlers, nothing flushed) the first time it reaches that point. Unset in
 * production; read once at start. Points: `image-settled` (an image call's charge is written,
 * its Idempotency-Key record and its answer are not).
 */
const FAULT = process.env.GATEWAY_FAULT;

export function faultPoint(point: string): void {
  if (FAULT === point) process.kill(process.pid, 'SIGKILL');
}
