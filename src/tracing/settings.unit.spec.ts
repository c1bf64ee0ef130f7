import { describe, expect, it } from 'vitest';
import { tracingSettingsOf, type TracingSettings } from './settings';

const on = (env: NodeJS.ProcessEnv): TracingSettings => {
  const result = tracingSettingsOf(env);
  if ('invalid' in result) throw new Error(result.invalid);
  if (result.tracing === null) throw new Error('tracing is off');
  return result.tracing;
};

const invalid = (env: NodeJS.ProcessEnv): string => {
  const result = tracingSettingsOf(env);
  if (!('invalid' in result)) throw new Error(`accepted: ${JSON.stringify(result)}`);
  return result.invalid;
};

describe('tracingSettingsOf', () => {
  it('is off without an OTLP endpoint, with an empty one, when the SDK is disabled or the exporter is none', () => {
    expect(tracingSettingsOf({})).toEqual({ tracing: null });
    expect(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ', OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toEqual({ tracing: null });
    expect(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toEqual({ tracing: null });
    expect(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toEqual({ tracing: null });
  });

  it('appends v1/traces to the shared endpoint and takes the traces endpoint as it is, which wins', () => {
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).url).toBe('http://collector:4318/v1/traces');
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com/otlp/' }).url).toBe('https://otlp.example.com/otlp/v1/traces');
    expect(on({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/custom/path' }).url).toBe('http://collector:4318/custom/path');
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/v1/traces' }).url).toBe('http://b:4318/v1/traces');
  });

  it('has the spec defaults: parent-based always-on sampling, service name model-gateway, 10 s export timeout, 5 s batches', () => {
    const settings = on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
    expect(settings.sampler).toEqual({ name: 'parentbased_always_on', ratio: 1 });
    expect(settings.resource).toEqual({ 'service.name': 'model-gateway' });
    expect(settings.timeoutMs).toBe(10_000);
    expect(settings.compression).toBe('none');
    expect(settings.headers).toEqual({});
    expect(settings.batch).toEqual({ scheduledDelayMs: 5000, maxQueueSize: 2048, maxExportBatchSize: 512, exportTimeoutMs: 30_000 });
  });

  it('reads the service name, resource attributes, headers (traces ones winning), timeout, compression, sampler and batch settings', () => {
    const settings = on({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_SERVICE_NAME: 'gateway-eu',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=ignored,deployment.environment.name=prod, team=a%20b',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20shared,x-tenant=1',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=2',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_SCHEDULE_DELAY: '0',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
    });
    expect(settings.resource).toEqual({ 'service.name': 'gateway-eu', 'deployment.environment.name': 'prod', team: 'a b' });
    expect(settings.headers).toEqual({ authorization: 'Bearer shared', 'x-tenant': '2' });
    expect(settings.timeoutMs).toBe(2500);
    expect(settings.compression).toBe('gzip');
    expect(settings.sampler).toEqual({ name: 'parentbased_traceidratio', ratio: 0.25 });
    expect(settings.batch).toMatchObject({ scheduledDelayMs: 0, maxQueueSize: 100, maxExportBatchSize: 10 });
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes' }).resource['service.name']).toBe('from-attributes');
  });

  it('refuses what it cannot honour, naming the variable', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(invalid({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toMatch(/^OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL/);
    expect(invalid({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' })).toMatch(/^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be/);
    expect(invalid({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatch(/^OTEL_EXPORTER_OTLP_PROTOCOL is "grpc", but the gateway exports OTLP over HTTP with JSON bodies/);
    expect(invalid({ ...endpoint, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })).toMatch(/^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is "http\/protobuf"/);
    expect(on({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).url).toBe('http://collector:4318/v1/traces');
    expect(invalid({ ...endpoint, OTEL_TRACES_EXPORTER: 'zipkin' })).toMatch(/^OTEL_TRACES_EXPORTER must be "otlp" or "none"/);
    expect(invalid({ ...endpoint, OTEL_TRACES_SAMPLER: 'sometimes' })).toMatch(/^OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio/);
    for (const arg of ['1.5', '-0.1', 'half', '50%'])
      expect(invalid({ ...endpoint, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg })).toBe(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, not "${arg}"`);
    expect(invalid({ ...endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: '0' })).toBe('OTEL_EXPORTER_OTLP_TIMEOUT must be a whole number above 0, not "0"');
    expect(invalid({ ...endpoint, OTEL_EXPORTER_OTLP_COMPRESSION: 'brotli' })).toBe('OTEL_EXPORTER_OTLP_COMPRESSION must be "gzip" or "none", not "brotli"');
    expect(invalid({ ...endpoint, OTEL_EXPORTER_OTLP_HEADERS: 'just-a-token' })).toMatch(/^OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value pairs/);
    expect(invalid({ ...endpoint, OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' })).toMatch(/must not exceed OTEL_BSP_MAX_QUEUE_SIZE/);
  });
});
