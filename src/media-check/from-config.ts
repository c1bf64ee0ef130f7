import type { MediaProbeConfig } from '../config/schema';
import { MediaProbe, MEDIA_PROBE_DEFAULTS } from './media-probe';
import { NO_MEDIA_PROBE, type UrlProbe } from './port';

/** The gateway's probe from the config's `media_probe` block (absent: on, with the defaults). */
export function probeFromConfig(config: MediaProbeConfig | undefined): UrlProbe {
  if (config === undefined) return new MediaProbe(MEDIA_PROBE_DEFAULTS);
  // Probing off passes every URL on unprobed; the URL policy still holds (it is not the probe's).
  if (!config.enabled) {
    const policy = new MediaProbe({ allowPrivateAddresses: config.allow_private_addresses, timeoutMs: config.timeout_ms });
    return { probe: NO_MEDIA_PROBE.probe, admit: (url) => policy.admit(url) };
  }
  return new MediaProbe({ allowPrivateAddresses: config.allow_private_addresses, timeoutMs: config.timeout_ms, maxReadBytes: config.max_read_bytes });
}

/**
 * The probe as the config file says now: a live reload (SIGHUP, POST /admin/v1/config/reload) replaces it
 * with `apply`; a probe already under way finishes with the settings it started with.
 */
export class ConfiguredProbe implements UrlProbe {
  private current: UrlProbe;

  constructor(config: MediaProbeConfig | undefined) {
    this.current = probeFromConfig(config);
  }

  apply(config: MediaProbeConfig | undefined): void {
    this.current = probeFromConfig(config);
  }

  probe(url: string): ReturnType<UrlProbe['probe']> {
    return this.current.probe(url);
  }

  admit(url: string): Promise<string | null> {
    return this.current.admit?.(url) ?? Promise.resolve(null);
  }
}
