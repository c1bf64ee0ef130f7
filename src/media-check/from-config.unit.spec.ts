import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../config/load';
import { ConfiguredProbe, probeFromConfig } from './from-config';
import { MediaProbe } from './media-probe';
import { NO_MEDIA_PROBE } from './port';

describe('media_probe in the config', () => {
  it('is optional: absent, the gateway probes with the defaults (private addresses refused, 3 s, 1 MiB)', () => {
    const config = parseConfig('models: []', {});
    expect(config.media_probe).toBeUndefined();
    const probe = probeFromConfig(config.media_probe);
    expect(probe).toBeInstanceOf(MediaProbe);
    expect((probe as MediaProbe).settings).toEqual({ allowPrivateAddresses: false, timeoutMs: 3000, maxReadBytes: 1048576 });
  });

  it('takes its keys, each defaulted', () => {
    const config = parseConfig('media_probe: {allow_private_addresses: true, timeout_ms: 500}', {});
    expect(config.media_probe).toEqual({ enabled: true, allow_private_addresses: true, timeout_ms: 500, max_read_bytes: 1048576 });
    expect((probeFromConfig(config.media_probe) as MediaProbe).settings).toEqual({ allowPrivateAddresses: true, timeoutMs: 500, maxReadBytes: 1048576 });
  });

  it('off, probes nothing but keeps the URL policy (issue 31, item 6); allow_private_addresses lifts it', async () => {
    const off = probeFromConfig(parseConfig('media_probe: {enabled: false}', {}).media_probe);
    expect(await off.probe('http://127.0.0.1/a.mp4')).toEqual(await NO_MEDIA_PROBE.probe('http://127.0.0.1/a.mp4'));
    expect(await off.admit!('http://127.0.0.1/a.mp4')).toMatch(/loopback/);
    const open = probeFromConfig(parseConfig('media_probe: {enabled: false, allow_private_addresses: true}', {}).media_probe);
    expect(await open.admit!('http://127.0.0.1/a.mp4')).toBeNull();
  });

  it('refuses unknown keys and values past the bounds, with the path', () => {
    expect(() => parseConfig('media_probe: {timeout: 100}', {})).toThrow(ConfigError);
    expect(() => parseConfig('media_probe: {timeout_ms: 10001}', {})).toThrow(/media_probe\.timeout_ms/);
    expect(() => parseConfig('media_probe: {timeout_ms: 1.5}', {})).toThrow(/media_probe\.timeout_ms/);
    expect(() => parseConfig('media_probe: {max_read_bytes: 8388609}', {})).toThrow(/media_probe\.max_read_bytes/);
    expect(() => parseConfig('media_probe: {allow_private_addresses: "yes"}', {})).toThrow(/media_probe\.allow_private_addresses/);
    expect(parseConfig('media_probe: {max_read_bytes: 8388608, timeout_ms: 10000}', {}).media_probe).toMatchObject({ max_read_bytes: 8388608, timeout_ms: 10000 });
  });

  it('follows a live reload: the probe the new file describes answers the next probe', async () => {
    const probe = new ConfiguredProbe(parseConfig('models: []', {}).media_probe);
    expect(await probe.probe('http://127.0.0.1:9/photo.jpg')).toMatchObject({ kind: 'refused', message: expect.stringContaining('a loopback address') });
    probe.apply(parseConfig('media_probe: {enabled: false}', {}).media_probe);
    expect(await probe.probe('http://127.0.0.1:9/photo.jpg')).toEqual({ kind: 'unprobed', reason: 'media probing is off' });
    probe.apply(undefined);
    expect(await probe.probe('http://127.0.0.1:9/photo.jpg')).toMatchObject({ kind: 'refused' });
  });
});
