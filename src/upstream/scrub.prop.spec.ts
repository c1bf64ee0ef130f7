/**
 * Property: for any channel config and any upstream text that holds its credentials (raw, JSON-escaped or
 * percent-encoded, among any other text), the scrubbed text holds none of them; nor any key-shaped text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MIN_KEY, MIN_VALUE, scrubberOf, scrubKeyShaped } from './scrub';

const RUNS = Math.max(200, Math.floor(Number(process.env.FC_RUNS ?? 10_000) / 10));

const text = fc.string({ maxLength: 40, unit: 'binary' });
const secret = (min: number) => fc.string({ minLength: min, maxLength: 48, unit: 'grapheme-ascii' });
const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/);
const userInfo = fc.stringMatching(/^[A-Za-z0-9._~-]{4,20}$/);

const config = fc.record({
  api_key: secret(MIN_KEY),
  headers: fc.dictionary(name, secret(MIN_VALUE), { maxKeys: 3 }),
  query: fc.dictionary(name, secret(MIN_VALUE), { maxKeys: 3 }),
  proxy: fc.option(fc.tuple(userInfo, userInfo), { nil: undefined }),
});

describe('scrub: no credential of the channel survives', () => {
  it('for any config and any text echoing its secrets in any form', () => {
    fc.assert(
      fc.property(config, fc.array(fc.tuple(text, fc.nat(), fc.constantFrom('raw', 'json', 'uri')), { minLength: 1, maxLength: 6 }), text, (c, pieces, tail) => {
        const channel = {
          api_key: c.api_key,
          base_url: 'https://api.example.com',
          headers: c.headers,
          query: c.query,
          ...(c.proxy ? { proxy: `http://${c.proxy[0]}:${c.proxy[1]}@proxy.example:3128` } : {}),
        };
        const secrets = [c.api_key, ...Object.values(c.headers), ...Object.values(c.query), ...(c.proxy ?? [])];
        const form = (s: string, how: string) => (how === 'json' ? JSON.stringify(s).slice(1, -1) : how === 'uri' ? encodeURIComponent(s) : s);
        const upstream = pieces.map(([before, i, how]) => `${before}${form(secrets[i % secrets.length]!, how)}`).join('') + tail;
        const out = scrubberOf(channel)(upstream);
        for (const s of secrets) expect(out.includes(s)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it('for any text holding a key-shaped token, whatever the channel', () => {
    const token = fc.stringMatching(/^[A-Za-z0-9]{24,40}$/);
    const shaped = fc.oneof(
      token.map((t) => ({ text: `sk-${t}`, secret: t })),
      token.map((t) => ({ text: `Bearer ${t}`, secret: t })),
      token.map((t) => ({ text: `"api_key":"${t}"`, secret: t })),
      token.map((t) => ({ text: `https://u:${t}@host/`, secret: t })),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }).map((s) => `${s} `), shaped, fc.string({ maxLength: 30 }).map((s) => ` ${s}`), (before, { text: key, secret: t }, after) => {
        expect(scrubKeyShaped(`${before}${key}${after}`).includes(t)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });
});
