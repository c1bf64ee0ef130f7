/**
 * A scrape-time read shared by the gauges that show it and by scrapes close together: a read in
 * flight is joined, and its result reused for `maxAgeMs` after it settled (a failure is not
 * reused: the next scrape reads again).
 */
export function sampled<T>(read: () => Promise<T>, maxAgeMs: number): () => Promise<T> {
  let value: Promise<T> | null = null;
  let settledAt: number | null = null;
  return () => {
    if (value !== null && (settledAt === null || performance.now() - settledAt <= maxAgeMs)) return value;
    settledAt = null;
    const reading = read();
    value = reading;
    reading.then(
      () => {
        if (value === reading) settledAt = performance.now();
      },
      () => {
        if (value === reading) value = null;
      },
    );
    return reading;
  };
}
