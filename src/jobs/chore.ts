/**
 * A background chore (releasing expired holds, purging old idempotency keys): run on a
 * timer, never two runs at once, failures reported and the next tick tried again. The
 * timer does not keep the process alive. Returns the function that stops it.
 */
export function startChore(run: () => Promise<unknown>, everyMs: number, onError: (error: unknown) => void): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    run()
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
