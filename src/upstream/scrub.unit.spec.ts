import { describe, expect, it } from 'vitest';
import { channelSecrets, REDACTED, scrubberOf, scrubKeyShaped, scrubSecrets, WITHHELD } from './scrub';

const channel = {
  api_key: 'sk-UPSTREAM-SECRET-0123456789',
  base_url: 'https://gw-user:base-pass-77@api.example.com/v1?code=base-query-secret',
  headers: { 'x-tenant-token': 'tenant-token-value', 'x-api-version': '2024' },
  query: { 'api-key': 'query-secret-value', v: '1' },
  proxy: 'http://proxy-user:pr%40xy-pass@proxy.corp:3128',
};

describe('scrubbing an upstream text of the channel credentials', () => {
  const scrub = scrubberOf(channel);

  it('cuts out the key, header values, query values and the user-info of the proxy and the base URL', () => {
    const echoed = JSON.stringify({
      error: {
        message: `bad request; headers: {"authorization":"Bearer ${channel.api_key}","x-tenant-token":"tenant-token-value"} url: /v1/chat?api-key=query-secret-value&code=base-query-secret via proxy-user:pr@xy-pass and gw-user:base-pass-77`,
      },
    });
    const out = scrub(echoed);
    for (const secret of [channel.api_key, 'tenant-token-value', 'query-secret-value', 'base-query-secret', 'pr@xy-pass', 'proxy-user', 'gw-user', 'base-pass-77']) expect(out).not.toContain(secret);
    expect(out).toContain(REDACTED);
    expect(JSON.parse(out).error.message).toMatch(/^bad request; headers:/);
  });

  it('cuts a secret out in the forms an echo gives it (JSON-escaped, percent-encoded)', () => {
    const odd = { api_key: 'ke"y/with spaces&more', base_url: 'http://up.example' };
    const out = scrubberOf(odd)(`${JSON.stringify(odd.api_key)} ${encodeURIComponent(odd.api_key)} ke%22y%2Fwith+spaces%26more`);
    expect(out).not.toContain('with spaces');
    expect(out).not.toContain('with%20spaces');
    expect(out).not.toContain('with+spaces');
  });

  it('keeps short values of the config (no secret) and the rest of the message', () => {
    expect(scrub('api-version 2024 is not supported; v=1')).toBe('api-version 2024 is not supported; v=1');
    expect(channelSecrets({ api_key: '', base_url: 'http://x' })).toEqual([]);
  });

  it('cuts key-shaped text whatever the channel: vendor keys, ours, bearer tokens, key=… pairs, URL user-info', () => {
    const ours = `sk-AbCdEfGh-${'0123456789abcdef'.repeat(4)}`;
    const cases = [
      `key ${ours} is not valid`,
      'Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx.',
      'sk-ant-api03-abcdefghijklmnop rejected',
      '"authorization":"Bearer abcdefghijklmnopqrstuvwxyz012345"',
      'API key not valid: AIzaSyA-1234567890abcdefghijklmnopqrstu',
      'request: /v1/models?key=0123456789abcdef0123',
      '{"x-api-key": "ZGVhZGJlZWZkZWFkYmVlZmRlYWRiZWVm"}',
      'connect to https://admin:hunter2hunter2@db.internal failed',
      'token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'AWS AKIAIOSFODNN7EXAMPLE denied',
    ];
    const secrets = [ours, 'sk-proj-abcdefghijklmnopqrstuvwx', 'sk-ant-api03-abcdefghijklmnop', 'abcdefghijklmnopqrstuvwxyz012345', 'AIzaSyA-1234567890abcdefghijklmnopqrstu', '0123456789abcdef0123', 'ZGVhZGJlZWZkZWFkYmVlZmRlYWRiZWVm', 'hunter2hunter2', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', 'AKIAIOSFODNN7EXAMPLE'];
    cases.forEach((text, i) => {
      const out = scrubKeyShaped(text);
      expect([text, out.includes(secrets[i]!)]).toEqual([text, false]);
      expect(out).toContain(REDACTED);
    });
  });

  it('leaves ordinary error text alone', () => {
    for (const text of ['model `gpt-4o` does not exist', 'max_tokens: must be at most 4096', 'the task-abc123 failed: risk assessment', 'Rate limit reached for requests', 'token count 1234 exceeds the limit'])
      expect(scrubKeyShaped(text)).toBe(text);
  });

  it('withholds the whole text when the marker itself would complete a secret', () => {
    expect(scrubSecrets('xx ACTED] yy', ['ACTED]'])).toBe(WITHHELD);
  });
});

describe('scrubbing an upstream text costs one pass over it', () => {
  // An error body is read up to a mebibyte (statusFailure): a pattern that rescans the rest of the text
  // from each position would hold the event loop for minutes on texts like these (found on a mebibyte
  // of `a`, which took the user-info pattern quadratic). Each must come back within the test's time.
  const MiB = 1024 * 1024;
  const long = (unit: string) => unit.repeat(Math.ceil(MiB / unit.length)).slice(0, MiB);
  const channel = { api_key: 'sk-channel-secret-0123456789', base_url: 'https://u:p4ssw0rd@upstream.example/v1?k=querysecret', headers: { 'x-org': 'org-123456' } };
  it.each([
    ['letters', long('a')],
    ['a scheme and colons', `x://${long('a:')}`],
    ['runs that look like web tokens', long('a-eyJa')],
    ['runs that look like keys', long('-sk-a')],
    ['key names without values', long('key ')],
    ['bearer words', long('Bearer ')],
    ['schemes', long('a://')],
  ])('%s', (_name, text) => {
    expect(typeof scrubKeyShaped(text)).toBe('string');
    expect(typeof scrubberOf(channel)(text)).toBe('string');
  }, 20_000);
});
