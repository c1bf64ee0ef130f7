import { describe, expect, it } from 'vitest';
import { fallsBack } from '../channels/failover';
import { fallbackChain } from './fallbacks';

const models = new Map(
  [
    { id: 'a', kind: 'text', fallbacks: ['b', 'c'] },
    { id: 'b', kind: 'text', fallbacks: ['d'] },
    { id: 'c', kind: 'text', fallbacks: ['d'] },
    { id: 'd', kind: 'text' },
  ].map((m) => [m.id, m]),
);
const chain = (id: string) => fallbackChain(models.get(id)!, (x) => models.get(x)).map((m) => m.id);

describe('fallbackChain', () => {
  it('is the model, then each fallback followed by its own, depth first, each model once', () => {
    expect(chain('a')).toEqual(['a', 'b', 'd', 'c']);
    expect(chain('c')).toEqual(['c', 'd']);
    expect(chain('d')).toEqual(['d']);
  });
});

describe('fallsBack', () => {
  const live = { expired: false, shuttingDown: false, aborted: false };
  const status = (code: number) => ({ kind: 'status' as const, status: code, body: '', headers: {} });
  it('after a 5xx, a 429, a failed or timed-out connection or refused credentials; never after another 4xx', () => {
    for (const failure of [status(500), status(503), status(429), { kind: 'unreachable' as const, message: '' }, { kind: 'timeout' as const, message: '' }, { kind: 'no_channel' as const, message: '' }])
      expect(fallsBack(failure, live), JSON.stringify(failure)).toBe(true);
    for (const failure of [status(400), status(404), status(413), status(422), { kind: 'shutdown' as const, message: '' }]) expect(fallsBack(failure, live), JSON.stringify(failure)).toBe(false);
  });
  it('never once the call ran out of time, was stopped, or the gateway shuts down', () => {
    for (const call of [{ ...live, expired: true }, { ...live, aborted: true }, { ...live, shuttingDown: true }]) expect(fallsBack(status(503), call)).toBe(false);
  });
});
