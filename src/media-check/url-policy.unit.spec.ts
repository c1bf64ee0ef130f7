import { describe, expect, it } from 'vitest';
import type { HostLookup } from './fetch';
import { addressRefusal, firstRefusedUrl } from './url-policy';

// The one URL policy (issue 31, item 6): what a client URL may name before the gateway passes it on.
const names: Record<string, string[]> = { 'inside.example': ['10.1.2.3'], 'both.example': ['93.184.215.14', '127.0.0.1'], 'public.example': ['93.184.215.14'] };
const lookup: HostLookup = async (host) => {
  const addresses = names[host];
  if (!addresses) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: 4 as const }));
};
const refused = (url: string, allowPrivateAddresses = false) => addressRefusal(url, { allowPrivateAddresses, lookup, timeoutMs: 1000 });

describe('addressRefusal', () => {
  it('refuses loopback, private, link-local (metadata), CGNAT and IPv4 embedded in IPv6, literal or by name', async () => {
    const cases: [string, RegExp][] = [
      ['http://169.254.169.254/latest/meta-data/iam/', /169\.254\.169\.254, the cloud metadata address/],
      ['http://127.0.0.1:9000/a.mp3', /loopback/],
      ['http://10.0.0.7/a.wav', /RFC 1918/],
      ['http://100.64.1.1/a.wav', /carrier-grade NAT/],
      ['http://169.254.10.10/', /link-local/],
      ['http://[::1]/', /loopback/],
      ['http://[::ffff:7f00:1]/', /loopback/],
      ['http://[::ffff:0:127.0.0.1]/', /loopback/],
      ['http://[fd00::1]/', /unique local/],
      ['http://localhost:8080/a', /localhost, a loopback name/],
      ['http://localhost.:8080/a', /localhost, a loopback name/],
      ['http://inside.example/a.mp3', /inside\.example, which resolves to 10\.1\.2\.3/],
      ['http://inside.example./a.mp3', /inside\.example, which resolves to 10\.1\.2\.3/],
      ['http://both.example/a.mp3', /resolves to 127\.0\.0\.1/],
      ['ftp://public.example/a.mp3', /http\(s\)/],
      ['not a url', /http\(s\)/],
    ];
    for (const [url, message] of cases) expect([url, await refused(url)]).toEqual([url, expect.stringMatching(message)]);
  });

  it('passes public addresses, names that resolve only to them, and names that do not resolve from here', async () => {
    for (const url of ['https://public.example/a.mp3', 'https://93.184.215.14/a', 'http://[2606:4700::1111]/', 'https://unknown.example/a.mp3'])
      expect([url, await refused(url)]).toEqual([url, null]);
  });

  it('passes everything http(s) when the config allows private addresses', async () => {
    expect(await refused('http://127.0.0.1/a', true)).toBeNull();
    expect(await refused('http://localhost./a', true)).toBeNull();
  });

  it('passes a name whose resolution outlasts the time limit', async () => {
    const slow: HostLookup = () => new Promise(() => {});
    expect(await addressRefusal('https://slow.example/a', { allowPrivateAddresses: false, lookup: slow, timeoutMs: 20 })).toBeNull();
  });

  it("names the first refused URL's field", async () => {
    const admit = (url: string) => refused(url);
    expect(await firstRefusedUrl(admit, [{ field: 'image', url: 'https://public.example/a.png' }, { field: 'image', url: 'http://127.0.0.1/b.png' }])).toMatch(/^image: the URL names 127\.0\.0\.1, a loopback address/);
    expect(await firstRefusedUrl(admit, [{ field: 'url', url: 'https://public.example/a.png' }])).toBeNull();
  });
});
