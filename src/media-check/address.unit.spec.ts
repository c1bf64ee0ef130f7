import { describe, expect, it } from 'vitest';
import { forbiddenAddressClass, forbiddenNameClass, hostOf } from './address';

describe('forbiddenAddressClass: what a media probe may not connect to', () => {
  it('names each class of non-public IPv4 address', () => {
    const cases: [string, string][] = [
      ['127.0.0.1', 'a loopback address'],
      ['127.255.0.9', 'a loopback address'],
      ['10.1.2.3', 'a private address (RFC 1918)'],
      ['172.16.0.1', 'a private address (RFC 1918)'],
      ['172.31.255.255', 'a private address (RFC 1918)'],
      ['192.168.0.10', 'a private address (RFC 1918)'],
      ['169.254.169.254', 'the cloud metadata address (link-local)'],
      ['169.254.1.1', 'a link-local address'],
      ['100.64.0.1', 'a shared address (carrier-grade NAT, RFC 6598)'],
      ['100.127.255.255', 'a shared address (carrier-grade NAT, RFC 6598)'],
      ['0.0.0.0', 'an unspecified address'],
      ['224.0.0.1', 'a multicast address'],
      ['239.255.255.250', 'a multicast address'],
      ['255.255.255.255', 'a reserved address'],
    ];
    for (const [address, name] of cases) expect([address, forbiddenAddressClass(address)]).toEqual([address, name]);
  });

  it('passes public IPv4 addresses, the neighbours of the ranges included', () => {
    for (const address of ['8.8.8.8', '93.184.215.14', '172.15.255.255', '172.32.0.0', '100.63.255.255', '100.128.0.0', '169.253.255.255', '11.0.0.0', '223.255.255.255'])
      expect([address, forbiddenAddressClass(address)]).toEqual([address, null]);
  });

  it('names IPv6 classes, and judges an IPv4 address embedded in IPv6 (mapped, compatible, NAT64) as IPv4', () => {
    const cases: [string, string][] = [
      ['::1', 'a loopback address'],
      ['::', 'an unspecified address'],
      ['fc00::1', 'a private address (unique local, fc00::/7)'],
      ['fd00:ec2::254', 'a private address (unique local, fc00::/7)'],
      ['fe80::1%eth0', 'a link-local address'],
      ['febf:ffff::1', 'a link-local address'],
      ['ff02::1', 'a multicast address'],
      ['::ffff:127.0.0.1', 'a loopback address'],
      ['::ffff:7f00:1', 'a loopback address'],
      ['::ffff:169.254.169.254', 'the cloud metadata address (link-local)'],
      ['::ffff:10.0.0.1', 'a private address (RFC 1918)'],
      ['::10.0.0.1', 'a private address (RFC 1918)'],
      ['64:ff9b::192.168.1.1', 'a private address (RFC 1918)'],
      // IPv4-translated (::ffff:0:0:0/96): `http://[::ffff:0:127.0.0.1]/` passed as unprobed (issue 31, item 6).
      ['::ffff:0:127.0.0.1', 'a loopback address'],
      ['::ffff:0:7f00:1', 'a loopback address'],
      ['::ffff:0:a9fe:a9fe', 'the cloud metadata address (link-local)'],
    ];
    for (const [address, name] of cases) expect([address, forbiddenAddressClass(address)]).toEqual([address, name]);
    for (const address of ['2606:4700::1111', '2001:4860:4860::8888', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', 'fbff::1'])
      expect([address, forbiddenAddressClass(address)]).toEqual([address, null]);
  });

  it('refuses what is no IP address', () => {
    expect(forbiddenAddressClass('example.com')).toBe('not an IP address');
    expect(forbiddenAddressClass('')).toBe('not an IP address');
  });
});

describe('hostOf and forbiddenNameClass: a URL host as a resolver sees it', () => {
  it('drops the brackets of an IPv6 literal, the case and the trailing dots of a fully qualified name', () => {
    expect(hostOf(new URL('http://localhost.:8080/a'))).toBe('localhost');
    expect(hostOf(new URL('http://Example.COM../a'))).toBe('example.com');
    expect(hostOf(new URL('http://[::ffff:0:127.0.0.1]/'))).toBe('::ffff:0:7f00:1');
  });

  it('refuses localhost and its sub-domains by name, whatever DNS says', () => {
    expect(forbiddenNameClass('localhost')).toBe('a loopback name');
    expect(forbiddenNameClass('api.localhost')).toBe('a loopback name');
    expect(forbiddenNameClass('localhost.example.com')).toBeNull();
    expect(forbiddenNameClass('mylocalhost')).toBeNull();
  });
});
