import { describe, expect, it } from 'vitest';
import type { Usage } from '../../upstream/contract';
import { streamUsage } from './stream-usage';

const estimate: Usage = { promptTokens: 100, cachedTokens: 0, cacheWriteTokens: 0, outputTokens: 4096, reasoningTokens: 0 };
const reported: Usage = { promptTokens: 90, cachedTokens: 40, cacheWriteTokens: 0, outputTokens: 1000, reasoningTokens: 200 };

describe('streamUsage', () => {
  it('bills the reported usage when the client took everything', () => {
    expect(streamUsage({ estimate, reported, observedChars: 3200, acceptedChars: 3200, delivered: true })).toEqual(reported);
  });

  it('bills the estimated prompt and the characters seen when no usage arrived and the client took everything', () => {
    expect(streamUsage({ estimate, reported: null, observedChars: 400, acceptedChars: 400, delivered: true })).toEqual({ ...estimate, outputTokens: 100 });
  });

  it('never bills 0 output when output went out', () => {
    const zero = { ...reported, outputTokens: 0, reasoningTokens: 0 };
    expect(streamUsage({ estimate, reported: zero, observedChars: 40, acceptedChars: 40, delivered: true }).outputTokens).toBe(10);
    expect(streamUsage({ estimate, reported: zero, observedChars: 40, acceptedChars: 8, delivered: false }).outputTokens).toBe(2);
  });

  it('bills the output the client did not take in no part: a share of the reported output, the prompt in full', () => {
    const billed = streamUsage({ estimate, reported, observedChars: 4000, acceptedChars: 1000, delivered: false });
    expect(billed).toEqual({ ...reported, outputTokens: 250, reasoningTokens: 50 });
  });

  it('bills the accepted characters over the estimated prompt when no usage arrived', () => {
    expect(streamUsage({ estimate, reported: null, observedChars: 4000, acceptedChars: 1000, delivered: false })).toEqual({ ...estimate, outputTokens: 250 });
    expect(streamUsage({ estimate, reported: null, observedChars: 4000, acceptedChars: 0, delivered: false })).toEqual({ ...estimate, outputTokens: 0 });
  });

  it('never bills more output than the upstream reported', () => {
    const billed = streamUsage({ estimate, reported: { ...reported, outputTokens: 10, reasoningTokens: 0 }, observedChars: 100, acceptedChars: 100, delivered: false });
    expect(billed.outputTokens).toBe(10);
  });
});
