import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Issue 21, item 19. No Docker engine runs these files here: what the issue asks of them is
// checked on their text (docker-compose.yml parsed as the YAML Compose reads).

const ROOT = join(import.meta.dirname, '../..');
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, { ports?: string[]; restart?: string; healthcheck?: { test: string[] }; stop_grace_period?: string }>;
};
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

/** A Compose duration (`5m`, `1m30s`, `200s`) in seconds. */
function seconds(duration: string): number {
  const parts = [...duration.matchAll(/(\d+)(h|m|s)/g)];
  expect(parts.map((p) => p[0]).join('')).toBe(duration);
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * { h: 3600, m: 60, s: 1 }[unit as 'h' | 'm' | 's'], 0);
}

describe('docker-compose.yml', () => {
  it('publishes the databases on loopback only; the gateway alone on every interface', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const port of service.ports ?? []) {
        if (name === 'gateway') continue;
        expect(port, `${name} publishes ${port}`).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
      }
    }
    expect(compose.services.eventstore!.ports).toEqual(['127.0.0.1:2113:2113']);
  });

  it('restarts every service', () => {
    for (const [name, service] of Object.entries(compose.services)) expect(service.restart, name).toMatch(/^(always|unless-stopped|on-failure(:\d+)?)$/);
  });

  it('checks the gateway on /healthz and gives a stop long enough for a chat stream (180 s)', () => {
    const gateway = compose.services.gateway!;
    expect(gateway.healthcheck?.test.join(' ')).toContain('/healthz');
    expect(seconds(gateway.stop_grace_period ?? '0s')).toBeGreaterThan(180);
  });
});

describe('Dockerfile', () => {
  it('builds on a supported Node LTS without dev dependencies', () => {
    const from = /^FROM node:(\d+)(-slim)?$/m.exec(dockerfile);
    expect(from).not.toBeNull();
    // Even majors are the LTS lines; 20 left maintenance in April 2026.
    const major = Number(from![1]);
    expect(major % 2).toBe(0);
    expect(major).toBeGreaterThanOrEqual(22);
    const installs = [...dockerfile.matchAll(/^RUN npm (ci|install)\b.*$/gm)].map((m) => m[0]);
    expect(installs.length).toBeGreaterThan(0);
    for (const install of installs) expect(install).toMatch(/--omit=dev/);
  });

  it('checks its own health', () => {
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/healthz/m);
  });
});
