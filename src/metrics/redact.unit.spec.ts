import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LOG_REDACT, redactUrl } from './redact';

const KEY = `sk-AbCd1234-${'0123456789abcdef'.repeat(4)}`;
const RUNS = Math.min(Number(process.env.FC_RUNS ?? 1_000), 1_000);

describe('redactUrl', () => {
  it('hides the value of ?key= however its name is written', () => {
    expect(redactUrl(`/v1beta/models/m:generateContent?key=${KEY}`)).toBe('/v1beta/models/m:generateContent?key=[redacted]');
    expect(redactUrl(`/v1/x?alt=sse&%6Bey=${KEY}`)).toBe('/v1/x?alt=sse&%6Bey=[redacted]');
    expect(redactUrl(`/v1/x?%6b%65%79=${KEY}&a=1`)).toBe('/v1/x?%6b%65%79=[redacted]&a=1');
    expect(redactUrl('/v1/x?KEY=not-a-key-shape')).toBe('/v1/x?KEY=[redacted]');
  });

  it('hides key-shaped text anywhere: a path segment, another parameter, percent-encoded', () => {
    expect(redactUrl(`/v1/${KEY}/x`)).toBe('/v1/[redacted]/x');
    expect(redactUrl(`/v1/x?api_key=${KEY}`)).toBe('/v1/x?api_key=[redacted]');
    const encoded = [...KEY].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    expect(redactUrl(`/v1/x?token=${encoded}`)).toBe('/v1/x?token=[redacted]');
    expect(redactUrl(`/v1/x?${KEY}=1`)).toBe('/v1/x?[redacted]=1');
  });

  it('leaves everything else as it was', () => {
    for (const url of ['/v1/chat/completions', '/api/v1/ext/wiki/search?q=sk-short&limit=5', '/v1/x?a=%zz&b', '/v1/x?', '/'])
      expect(redactUrl(url)).toBe(url);
  });

  it('never lets a key through, wherever it is put in a URL', () => {
    const encodings = fc.constantFrom(
      (s: string) => s,
      (s: string) => encodeURIComponent(s),
      (s: string) => [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join(''),
    );
    const text = fc.string({ unit: fc.constantFrom('a', 'b', '-', '%', '=', '&', '?', '/', '+') });
    fc.assert(
      fc.property(text, text, encodings, fc.constantFrom('path', 'name', 'value'), (before, after, encode, place) => {
        const hidden = encode(KEY);
        const url =
          place === 'path' ? `/v1/${before}${hidden}${after}` : place === 'name' ? `/v1/x?${before}${hidden}=1` : `/v1/x?a=${before}${hidden}${after}`;
        const redacted = redactUrl(url);
        expect(redacted).not.toContain(KEY);
        expect(redacted).not.toContain(KEY.slice(12));
      }),
      { numRuns: RUNS },
    );
  });
});

describe('LOG_REDACT', () => {
  it("keeps a holder's password and a password hash out of a log line", async () => {
    const { Writable } = await import('node:stream');
    const pino = (await import('pino')).default;
    const lines: string[] = [];
    const log = pino({ redact: LOG_REDACT }, new Writable({ write: (chunk, _e, done) => (lines.push(String(chunk)), done()) }));
    log.info({ body: { email: 'ada@example.test', password: 'correct horse battery' }, password_hash: 'scrypt$1$2$3$salt$hash' }, 'a form');
    expect(lines.join('')).toContain('ada@example.test');
    expect(lines.join('')).not.toContain('correct horse');
    expect(lines.join('')).not.toContain('scrypt$');
  });
});
