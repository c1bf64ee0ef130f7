import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { loopBusierThan } from './runner';

function spin(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe('loopBusierThan', () => {
  it('tells a stretch of work from a stretch of waiting, each since the last question', async () => {
    const busy = loopBusierThan(0.5);
    spin(60);
    expect(busy()).toBe(true);
    await sleep(120);
    expect(busy()).toBe(false);
  });
});
