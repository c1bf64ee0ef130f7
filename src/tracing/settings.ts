/**
 * Tracing's settings from the standard OpenTelemetry variables, read from the environment the
 * gateway's settings came from (not from `process.env` behind its back), so that a test or an
 * embedding gives the tracer the same environment as the rest of the gateway.
 */

export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

const SAMPLERS: readonly SamplerName[] = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];

export interface TracingSettings {
  /** Where spans are posted (OTLP/HTTP, JSON bodies). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly compression: 'none' | 'gzip';
  /** Resource attributes, `service.name` included. */
  readonly resource: Readonly<Record<string, string>>;
  readonly sampler: { readonly name: SamplerName; readonly ratio: number };
  readonly batch: {
    readonly scheduledDelayMs: number;
    readonly maxQueueSize: number;
    readonly maxExportBatchSize: number;
    readonly exportTimeoutMs: number;
  };
}

export const DEFAULT_SERVICE_NAME = 'model-gateway';

/** Tracing is on only with an endpoint: `null` is off. An unusable value is `invalid` (the start stops). */
export type TracingSettingsResult = { readonly tracing: TracingSettings | null } | { readonly invalid: string };

/** An empty variable is an unset one, as for every gateway setting. */
const blank = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

class Invalid extends Error {}

export function tracingSettingsOf(env: NodeJS.ProcessEnv): TracingSettingsResult {
  try {
    return { tracing: read(env) };
  } catch (error) {
    if (error instanceof Invalid) return { invalid: error.message };
    throw error;
  }
}

function read(env: NodeJS.ProcessEnv): TracingSettings | null {
  const get = (name: string) => blank(env[name]);
  const disabled = get('OTEL_SDK_DISABLED');
  if (disabled !== undefined && disabled.toLowerCase() === 'true') return null;
  const exporter = get('OTEL_TRACES_EXPORTER');
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none')
    throw new Invalid(`OTEL_TRACES_EXPORTER must be "otlp" or "none" (the gateway exports OTLP only), not "${exporter}"`);
  if (exporter === 'none') return null;
  const url = endpointOf(get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'), get('OTEL_EXPORTER_OTLP_ENDPOINT'));
  if (url === null) return null;

  const protocolVar = get('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = get(protocolVar);
  if (protocol !== undefined && protocol !== 'http/json')
    throw new Invalid(`${protocolVar} is "${protocol}", but the gateway exports OTLP over HTTP with JSON bodies: set it to http/json or leave it unset (an OTLP/HTTP receiver, such as the Collector on port 4318, takes both encodings)`);

  const serviceName = get('OTEL_SERVICE_NAME');
  const resource = { ...keyValues('OTEL_RESOURCE_ATTRIBUTES', get('OTEL_RESOURCE_ATTRIBUTES')) };
  // OTEL_SERVICE_NAME wins over a service.name among the resource attributes (the spec's rule).
  resource['service.name'] = serviceName ?? resource['service.name'] ?? DEFAULT_SERVICE_NAME;

  const maxQueueSize = count(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048);
  const maxExportBatchSize = count(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512);
  if (maxExportBatchSize > maxQueueSize)
    throw new Invalid(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE (${maxExportBatchSize}) must not exceed OTEL_BSP_MAX_QUEUE_SIZE (${maxQueueSize})`);

  return {
    url,
    // The signal's own headers override the shared ones, name by name.
    headers: {
      ...keyValues('OTEL_EXPORTER_OTLP_HEADERS', get('OTEL_EXPORTER_OTLP_HEADERS')),
      ...keyValues('OTEL_EXPORTER_OTLP_TRACES_HEADERS', get('OTEL_EXPORTER_OTLP_TRACES_HEADERS')),
    },
    timeoutMs: count(env, get('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT' : 'OTEL_EXPORTER_OTLP_TIMEOUT', 10_000),
    compression: compressionOf(get('OTEL_EXPORTER_OTLP_TRACES_COMPRESSION') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION' : 'OTEL_EXPORTER_OTLP_COMPRESSION', env),
    resource,
    sampler: samplerOf(get('OTEL_TRACES_SAMPLER'), get('OTEL_TRACES_SAMPLER_ARG')),
    batch: {
      scheduledDelayMs: count(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, true),
      maxQueueSize,
      maxExportBatchSize,
      exportTimeoutMs: count(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000),
    },
  };
}

/** The traces endpoint is used as given; the shared one is a base that `v1/traces` is appended to. */
function endpointOf(traces: string | undefined, shared: string | undefined): string | null {
  if (traces !== undefined) return httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces);
  if (shared === undefined) return null;
  const base = httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', shared);
  return `${base.endsWith('/') ? base : `${base}/`}v1/traces`;
}

function httpUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Invalid(`${name} must be an http:// or https:// URL, not "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Invalid(`${name} must be an http:// or https:// URL, not "${value}"`);
  return value;
}

/** `key=value` pairs separated by commas, values percent-encoded (the W3C Baggage form the spec uses). */
function keyValues(name: string, value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (value === undefined) return out;
  for (const entry of value.split(',')) {
    if (entry.trim() === '') continue;
    const at = entry.indexOf('=');
    const key = at < 0 ? '' : entry.slice(0, at).trim();
    if (key === '') throw new Invalid(`${name} must be a list of key=value pairs separated by commas, not "${value}"`);
    try {
      out[key] = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      throw new Invalid(`${name}: the value of "${key}" is not valid percent-encoding`);
    }
  }
  return out;
}

/** A whole number of milliseconds or items; `zero` allows 0. */
function count(env: NodeJS.ProcessEnv, name: string, fallback: number, zero = false): number {
  const value = blank(env[name]);
  if (value === undefined) return fallback;
  const n = /^\d{1,9}$/.test(value) ? Number(value) : NaN;
  if (!(n > 0 || (zero && n === 0))) throw new Invalid(`${name} must be a whole number${zero ? '' : ' above 0'}, not "${value}"`);
  return n;
}

function compressionOf(name: string, env: NodeJS.ProcessEnv): 'none' | 'gzip' {
  const value = blank(env[name]);
  if (value === undefined || value === 'none') return 'none';
  if (value === 'gzip') return 'gzip';
  throw new Invalid(`${name} must be "gzip" or "none", not "${value}"`);
}

function samplerOf(name: string | undefined, arg: string | undefined): TracingSettings['sampler'] {
  const sampler = (name ?? 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(sampler)) throw new Invalid(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, not "${name}"`);
  if (!sampler.endsWith('traceidratio') || arg === undefined) return { name: sampler, ratio: 1 };
  const ratio = /^(0|1|0?\.\d+|1\.0*)$/.test(arg) ? Number(arg) : NaN;
  if (!(ratio >= 0 && ratio <= 1)) throw new Invalid(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, not "${arg}"`);
  return { name: sampler, ratio };
}

/** An endpoint as it may be logged: without credentials in its user-info. */
export function redactedEndpoint(url: string): string {
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return url;
  parsed.username = '';
  parsed.password = '';
  return parsed.href;
}
