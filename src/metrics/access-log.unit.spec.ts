import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { logAccess } from './access-log';

function requestLoggingAt(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  const request = { method: 'GET', url: '/v1/models?key=sk-secret', caller: null, log: pino({ level }, sink) } as unknown as FastifyRequest;
  return { request, lines };
}

describe('logAccess', () => {
  it('writes one info line with the URL redacted', () => {
    const { request, lines } = requestLoggingAt('info');
    logAccess(request, 200, 1.23456, null);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, msg: 'access', method: 'GET', status: 200, latency_ms: 1.2 });
    expect(String(lines[0]!.url)).not.toContain('sk-secret');
  });

  it('writes nothing above info (LOG_LEVEL=warn)', () => {
    const { request, lines } = requestLoggingAt('warn');
    logAccess(request, 200, 1, null);
    expect(lines).toEqual([]);
  });
});
