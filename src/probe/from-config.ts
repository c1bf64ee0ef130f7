import type { MediaProbeConfig } from '../config/schema';
import { MediaProbe, MEDIA_PROBE_DEFAULTS } from './media-probe';
import { NO_PROBE, type UrlProbe } from './port';

/** The gateway's probe from the config's `media_probe` block (absent: on, with the defaults). */
export function probeFromConfig(config: MediaProbeConfig | undefined): UrlProbe {
  if (config === undefined) return new MediaProbe(MEDIA_PROBE_DEFAULTS);
  if (!config.enabled) return NO_PROBE;
  return new MediaProbe({ allowPrivateAddresses: config.allow_private_addresses, timeoutMs: config.timeout_ms, maxReadBytes: config.max_read_bytes });
}
