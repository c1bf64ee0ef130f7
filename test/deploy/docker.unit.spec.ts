import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Issue 21, item 19 and issue 18, item 6. No Docker engine runs these files here: what the
// images' documentation asks of them is checked on their text (docker-compose.yml and
// deploy/prometheus.yml parsed as the YAML Compose and Prometheus read); test/deploy/
// image.e2e.spec.ts runs the gateway the way the image does.

const ROOT = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  profiles?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  secrets?: Array<{ source: string; target: string; mode?: number }>;
  restart?: string;
  init?: boolean;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
}
const compose = parse(read('docker-compose.yml')) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
  secrets: Record<string, { environment?: string; file?: string }>;
};
const services = compose.services;
const gateway = services.gateway!;
const dockerfile = read('Dockerfile');
const prometheus = parse(read('deploy/prometheus.yml')) as {
  scrape_configs: Array<{
    job_name: string;
    scheme?: string;
    metrics_path?: string;
    authorization?: { type?: string; credentials?: string; credentials_file?: string };
    dns_sd_configs?: Array<{ names: string[]; type: string; port: number }>;
  }>;
};

/** A Compose duration (`5m`, `1m30s`, `200s`) in seconds. */
function seconds(duration: string): number {
  const parts = [...duration.matchAll(/(\d+)(h|m|s)/g)];
  expect(parts.map((p) => p[0]).join('')).toBe(duration);
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * { h: 3600, m: 60, s: 1 }[unit as 'h' | 'm' | 's'], 0);
}

/** The container paths of a service's named volumes, by volume name (bind mounts left out). */
function namedVolumes(service: Service): Map<string, string> {
  const named = new Map<string, string>();
  for (const volume of service.volumes ?? []) {
    const [source, target] = volume.split(':');
    if (!source!.startsWith('.') && !source!.startsWith('/')) named.set(target!, source!);
  }
  return named;
}

/** Every variable the README's environment table documents (a row may name several). */
function documentedVariables(): Set<string> {
  const table = read('README.md').split('## Environment')[1]!.split('\n## ')[0]!;
  const names = new Set<string>();
  for (const row of table.split('\n').filter((line) => line.startsWith('| `'))) {
    for (const [, name] of row.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(name!);
  }
  return names;
}

/** The Dockerfile instruction's JSON (exec form) arguments. */
function execForm(instruction: 'CMD' | 'HEALTHCHECK'): string[] {
  const match = new RegExp(`^${instruction} (?:[^\\n]*\\\\\\n)*?[^\\n]*?(?:CMD )?(\\[.*\\])$`, 'm').exec(dockerfile);
  expect(match, `${instruction} in the exec (JSON) form`).not.toBeNull();
  return JSON.parse(match![1]!) as string[];
}

describe('docker-compose.yml', () => {
  it('publishes the databases on loopback only; the gateway alone on every interface', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const port of service.ports ?? []) {
        if (name === 'gateway') continue;
        expect(port, `${name} publishes ${port}`).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
      }
    }
    expect(services.eventstore!.ports).toEqual(['127.0.0.1:2113:2113']);
  });

  it('restarts every service', () => {
    for (const [name, service] of Object.entries(services)) expect(service.restart, name).toMatch(/^(always|unless-stopped|on-failure(:\d+)?)$/);
  });

  it('checks the gateway on /healthz and gives a stop long enough for a chat stream (180 s)', () => {
    expect(gateway.healthcheck?.test.join(' ')).toContain('/healthz');
    expect(seconds(gateway.stop_grace_period ?? '0s')).toBeGreaterThan(180);
    // PID 1 an init that forwards the stop signal (the Node images' advice).
    expect(gateway.init).toBe(true);
  });

  it('starts the gateway once each of its stores passes the health check its image documents', () => {
    const checks: Record<string, RegExp> = {
      // Over TCP (-h): during initialisation the server listens on its socket only.
      postgres: /pg_isready -h \S+/,
      redis: /^CMD redis-cli ping$/,
      eventstore: /http:\/\/localhost:2113\/health\/live/,
    };
    expect(Object.keys(gateway.depends_on ?? {}).sort()).toEqual(Object.keys(checks).sort());
    for (const [name, check] of Object.entries(checks)) {
      expect(gateway.depends_on![name], name).toEqual({ condition: 'service_healthy' });
      expect(services[name]!.healthcheck?.test.join(' '), name).toMatch(check);
    }
  });

  it('runs EventStoreDB as an insecure single node, and the gateway connects without TLS', () => {
    const eventstore = services.eventstore!;
    // EventStoreDB (to 24.10) reads EVENTSTORE_*; KurrentDB (25.0 on) KURRENTDB_*.
    const prefix = eventstore.image!.startsWith('eventstore/eventstore:') ? 'EVENTSTORE_' : 'KURRENTDB_';
    expect(eventstore.image).toMatch(/^(eventstore\/eventstore|kurrentplatform\/kurrentdb):/);
    expect(eventstore.environment).toMatchObject({ [`${prefix}CLUSTER_SIZE`]: '1', [`${prefix}INSECURE`]: 'true' });
    for (const name of Object.keys(eventstore.environment!)) expect(name).toMatch(new RegExp(`^${prefix}`));
    const url = new URL(gateway.environment!.EVENTSTORE_URL!);
    expect(url.host).toBe('eventstore:2113');
    expect(url.searchParams.get('tls')).toBe('false');
  });

  it('keeps every data directory on a named volume, at the path its image uses', () => {
    const eventstoreDir = services.eventstore!.image!.startsWith('kurrentplatform/') ? 'kurrentdb' : 'eventstore';
    const postgresMajor = Number(/^postgres:(\d+)/.exec(services.postgres!.image!)![1]);
    const expected: Record<string, string[]> = {
      eventstore: [`/var/lib/${eventstoreDir}`, `/var/log/${eventstoreDir}`],
      // The postgres image moved its data directory and volume in 18.
      postgres: [postgresMajor >= 18 ? '/var/lib/postgresql' : '/var/lib/postgresql/data'],
      redis: ['/data'],
      gateway: [gateway.environment!.DATA_DIR!],
      prometheus: ['/prometheus'],
    };
    for (const [name, paths] of Object.entries(expected)) {
      const volumes = namedVolumes(services[name]!);
      for (const path of paths) {
        expect(volumes.has(path), `${name}: a named volume at ${path}`).toBe(true);
        expect(compose.volumes, `${name}: volume ${volumes.get(path)} declared`).toHaveProperty(volumes.get(path)!);
      }
    }
  });

  it('gives Postgres more than the default 10 s to shut down (the image recommends it)', () => {
    expect(seconds(services.postgres!.stop_grace_period ?? '0s')).toBeGreaterThanOrEqual(60);
  });

  it('configures the gateway with documented variables only, secrets from the environment', () => {
    const documented = documentedVariables();
    for (const name of Object.keys(gateway.environment!)) expect(documented, `${name} is in the README's table`).toContain(name);
    expect(gateway.environment).toMatchObject({ HOST: '0.0.0.0', DATA_DIR: '/data' });
    expect(new URL(gateway.environment!.DATABASE_URL!).host).toBe('postgres:5432');
    expect(new URL(gateway.environment!.REDIS_URL!).host).toBe('redis:6379');
    // `${X:-}`: an unset variable is empty, which the gateway takes as unset (it generates the
    // admin token and the key secret into DATA_DIR; /metrics is refused, HOST being 0.0.0.0).
    for (const name of ['ADMIN_TOKEN', 'KEY_ENCRYPTION_SECRET', 'METRICS_TOKEN']) expect(gateway.environment![name]).toBe(`\${${name}:-}`);
    // The example .env lists the same secrets, each one documented.
    const example = read('deploy/compose.env.example')
      .split('\n')
      .filter((line) => /^[A-Z]/.test(line))
      .map((line) => line.split('=')[0]!);
    expect(example.sort()).toEqual(['ADMIN_TOKEN', 'KEY_ENCRYPTION_SECRET', 'METRICS_TOKEN']);
  });

  it('keeps the .env file out of git and out of the image', () => {
    expect(read('.gitignore').split('\n')).toContain('.env');
    expect(read('.dockerignore').split('\n')).toContain('.env');
  });

  it('starts Prometheus only with the monitoring profile, with the gateway\'s metrics token', () => {
    const defaults = Object.entries(services).filter(([, service]) => !service.profiles).map(([name]) => name);
    expect(defaults.sort()).toEqual(['eventstore', 'gateway', 'postgres', 'redis']);
    const service = services.prometheus!;
    expect(service.profiles).toEqual(['monitoring']);
    expect(service.volumes).toContain('./deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    expect(service.ports).toEqual(['127.0.0.1:9090:9090']);
    // The secret holds the gateway's METRICS_TOKEN, at the file the scrape job reads, readable by
    // the image's `nobody` (Compose writes an environment secret as root, 0400 by default).
    const [secret] = service.secrets!;
    expect(compose.secrets[secret!.source]).toEqual({ environment: 'METRICS_TOKEN' });
    expect(gateway.environment!.METRICS_TOKEN).toBe('${METRICS_TOKEN:-}');
    const job = prometheus.scrape_configs.find((c) => c.job_name === 'gateway')!;
    expect(job.authorization?.credentials_file).toBe(`/run/secrets/${secret!.target}`);
    expect(secret!.mode! & 0o004).toBe(0o004);
  });
});

describe('deploy/prometheus.yml', () => {
  const job = prometheus.scrape_configs.find((c) => c.job_name === 'gateway');

  it('scrapes GET /metrics with the bearer token from a file', () => {
    expect(job).toBeDefined();
    expect(job!.scheme ?? 'http').toBe('http');
    expect(job!.metrics_path ?? '/metrics').toBe('/metrics');
    expect(job!.authorization?.type ?? 'Bearer').toBe('Bearer');
    // A token written in the file would be one more copy of the secret.
    expect(job!.authorization?.credentials).toBeUndefined();
    expect(job!.authorization?.credentials_file).toMatch(/^\//);
  });

  it('scrapes each instance: every address of the gateway service, on its port', () => {
    expect(job!.dns_sd_configs).toEqual([expect.objectContaining({ names: ['gateway'], type: 'A', port: Number(gateway.environment!.PORT) })]);
  });
});

describe('Dockerfile', () => {
  it('builds on a supported Node LTS without dev dependencies', () => {
    const from = /^FROM node:(\d+)(-slim)?$/m.exec(dockerfile);
    expect(from).not.toBeNull();
    // Even majors are the LTS lines; 20 reached its end of life in April 2026.
    const major = Number(from![1]);
    expect(major % 2).toBe(0);
    expect(major).toBeGreaterThanOrEqual(22);
    const installs = [...dockerfile.matchAll(/^RUN npm (ci|install)\b.*$/gm)].map((m) => m[0]);
    expect(installs.length).toBeGreaterThan(0);
    for (const install of installs) expect(install).toMatch(/--omit=dev/);
  });

  it('runs as the unprivileged node user, in production mode', () => {
    const users = [...dockerfile.matchAll(/^USER (\S+)$/gm)].map((m) => m[1]);
    expect(users.at(-1)).toBe('node');
    expect(dockerfile).toMatch(/^ENV NODE_ENV=production\b/m);
    expect(dockerfile).toMatch(/^RUN mkdir -p \/data && chown node:node \/data$/m);
  });

  it('starts what npm start starts, as node itself (exec form: node receives the stop signal)', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start.split(' ');
    expect(execForm('CMD')).toEqual(start);
  });

  it('checks its own health as the compose file does, on /healthz', () => {
    const check = execForm('HEALTHCHECK');
    expect(check.join(' ')).toContain('/healthz');
    expect(['CMD', ...check]).toEqual(gateway.healthcheck!.test);
  });
});
