import type { RebuildProgress } from './runner';

/** How far a rebuild has come, as the terminal shows it: events done, rate, an estimate of the time left. */
export function progressLine(progress: RebuildProgress, elapsedMs: number): string {
  const rate = ratePerSecond(progress.events, elapsedMs);
  // The log's second position (Postgres: the event's global position; EventStoreDB: its offset)
  // grows with what was written, so the share of it passed estimates the share of the work done.
  const done = progress.head.prepare > 0n ? Math.min(1, Number(progress.at.prepare) / Number(progress.head.prepare)) : 1;
  const left = done > 0 ? (elapsedMs * (1 - done)) / done : Number.NaN;
  return `${progress.events.toLocaleString('en-US')} events, ${Math.round(done * 100)}%, ${rate.toLocaleString('en-US')} events/s, ${duration(left)} left`;
}

/** The last line: everything read, how long it took, the rate. */
export function finalLine(names: readonly string[], events: number, elapsedMs: number): string {
  return `rebuilt ${names.join(', ')}: ${events.toLocaleString('en-US')} events in ${(elapsedMs / 1000).toFixed(1)} s (${ratePerSecond(events, elapsedMs).toLocaleString('en-US')} events/s)`;
}

function ratePerSecond(events: number, elapsedMs: number): number {
  return elapsedMs > 0 ? Math.round((events * 1000) / elapsedMs) : 0;
}

function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '?';
  const s = Math.ceil(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}
