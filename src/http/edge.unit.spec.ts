import { describe, expect, it } from 'vitest';
import { corsOriginsOf, trustProxyOf } from './edge';

describe('TRUST_PROXY', () => {
  it('is off unless set; true, a hop count, or addresses and CIDRs', () => {
    expect(trustProxyOf(undefined)).toBe(false);
    expect(trustProxyOf('false')).toBe(false);
    expect(trustProxyOf('true')).toBe(true);
    expect(trustProxyOf('2')).toBe(2);
    expect(trustProxyOf('10.0.0.0/8, 127.0.0.1,::1,fd00::/8')).toEqual(['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8']);
  });

  it('refuses what is not an address, naming the entry', () => {
    expect(() => trustProxyOf('yes')).toThrow(/TRUST_PROXY .* not "yes"/);
    expect(() => trustProxyOf('10.0.0.0/33')).toThrow(/not "10.0.0.0\/33"/);
    expect(() => trustProxyOf('lb.example.com')).toThrow(/not "lb.example.com"/);
  });
});

describe('CORS_ORIGINS', () => {
  it('is off unless set; every origin or a list of them', () => {
    expect(corsOriginsOf(undefined)).toBeNull();
    expect(corsOriginsOf('*')).toBe('*');
    expect(corsOriginsOf('https://app.example.com, http://localhost:5173')).toEqual(['https://app.example.com', 'http://localhost:5173']);
  });

  it('refuses what is not an origin (a path, a trailing slash, another scheme)', () => {
    expect(() => corsOriginsOf('https://app.example.com/')).toThrow(/not "https:\/\/app.example.com\/"/);
    expect(() => corsOriginsOf('app.example.com')).toThrow(/CORS_ORIGINS/);
    expect(() => corsOriginsOf('ftp://app.example.com')).toThrow(/CORS_ORIGINS/);
  });
});
