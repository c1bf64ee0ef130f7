import { readdir, readFile } from 'node:fs/promises';
import { join, relative as relativePath, resolve as resolvePath, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { pageFromMarkdown } from './commands/knowledge/markdown';
import { startSimulator } from './simulator';
import pino from 'pino';
import { parse as parseYaml } from 'yaml';
import { verifyLedger } from './projections/verify';
import { allProjections } from './projections';
import { ProjectionRunner, type RunnerOptions } from './projections/runner/runner';
import { finalLine, progressLine } from './projections/runner/rebuild-progress';
import { requestSerializers } from './runtime/app';
import { adminTokenOf, createGateway, openStorage, SettingError, settingsFromEnv, type Settings } from './runtime/gateway';

/** How often `projections run` looks for new events when it has caught up. */
const PROJECTION_WORKER_POLL_MS = 20;

const USAGE = `Usage: gateway <command> [options]

  serve                                   run the gateway (env: PORT, HOST, DATA_DIR, DATABASE_URL, ...)
  projections rebuild [NAME]              drop and replay one projection, or all (${allProjections.map((p) => p.name).join(', ')})
  projections status                      checkpoint and parked events of each projection
  projections run                         apply the log to the read models until SIGINT/SIGTERM: the worker for
                                          gateways started with PROJECTIONS=external (Postgres only)
  ledger verify [--account ID]            replay the events and compare with the projections; exit 1 on a difference
  ledger rerate --model M --from T --to T --price FILE [--apply --reference R] [--reason TEXT]
                                          price a model's billed calls in [from, to) again (T: Unix seconds, RFC 3339
                                          or YYYY-MM-DD; FILE: YAML/JSON price object); prints every affected call and
                                          the difference per account; --apply appends one adjustment per account,
                                          idempotent on R (admin API: POST /admin/v1/rerates)
  ledger verify --parked                  list the events the projections parked (could not apply); exit 1 if any

  accounts create NAME [--group GROUP]    (these talk to a running gateway's admin API:
  accounts list                            GATEWAY_URL, default http://HOST:PORT, and ADMIN_TOKEN
  accounts show ID                         or the token saved in DATA_DIR)
  accounts topup ID AMOUNT_USD [--reference TEXT]
  accounts limits ID [--rpm N|none] [--concurrency N|none]   (a limit not given keeps its value)
  accounts group ID GROUP|none            bind the account to a channel group (none: unbind, every channel)
  accounts deactivate ID [--reason TEXT]
  accounts reactivate ID
  accounts ledger ID
  accounts login-link ID                  a one-time sign-in link to the account's web console (/console/), 15 minutes
  keys create ACCOUNT_ID --name NAME [--models a,b|none] [--expires-at UNIX] [--spend-cap USD] [--group GROUP] [--disabled]
  keys list ACCOUNT_ID
  keys update KEY_ID [--name NAME] [--models a,b|all|none] [--expires-at UNIX|never] [--spend-cap USD|none]
                     [--group GROUP|none] [--enable|--disable]   (a key's group wins over its account's)
  keys revoke KEY_ID
  keys delete KEY_ID
  keys reveal KEY_ID
  kb create ACCOUNT_ID KB_ID --title TITLE [--readers ACCOUNT,ACCOUNT]
  kb update ACCOUNT_ID KB_ID [--title TITLE] [--readers ACCOUNT,ACCOUNT]
  kb import ACCOUNT_ID DIR [--kb KB_ID] [--no-sources]
                                          import Markdown files (YAML front matter optional) into a base
                                          (default: the account's personal base "default")
  enterprise set ACCOUNT_ID [--models a,b|all] [--default-model MODEL]
                                          make an account an enterprise (its wallet pays for its agents)
  enterprise show ACCOUNT_ID
  enterprise member ACCOUNT_ID MEMBER_ID admin|member
  enterprise remove-member ACCOUNT_ID MEMBER_ID
  enterprise requests ACCOUNT_ID [--status pending|approved|rejected|all]
  enterprise audit ACCOUNT_ID
  agents create ACCOUNT_ID --name NAME --creator ACCOUNT --prompt TEXT [--model MODEL] [--web-search] [--drawing]
                [--kbs a,b] [--temperature T] [--unpublished]
  agents list ACCOUNT_ID
  agents update AGENT_ID [--name NAME] [--prompt TEXT] [--model MODEL|none] [--kbs a,b] [--temperature T|none]
                [--web-search|--no-web-search] [--drawing|--no-drawing] [--publish|--unpublished]
  agents delete AGENT_ID
  agents key AGENT_ID --name NAME --by ADMIN [--spend-cap USD]
                                          an enterprise admin issues an agent key
  agents request-key AGENT_ID --name NAME --by MEMBER --spend-cap USD
  agents approve REQUEST_ID --by ADMIN    the cap moves into the key's escrow (402 when unfunded)
  agents reject REQUEST_ID --by ADMIN [--reason TEXT]
`;

class UsageError extends Error {}

const DEFAULT_SIMULATOR_URL = 'http://127.0.0.1:8090';

/** The zero-setup demo: with the bundled config, its channels point at the built-in
 * simulator, so run one in-process unless something already answers there. */
async function startDemoSimulator(settings: Settings): Promise<{ line: string; close: () => Promise<void> }> {
  if (settings.configPath) return { line: '', close: async () => {} };
  const url = new URL(process.env.SIMULATOR_URL?.trim() || DEFAULT_SIMULATOR_URL);
  try {
    const sim = await startSimulator({ port: Number(url.port || 80), host: url.hostname });
    return { line: `upstream simulator (demo channels): ${sim.url}`, close: () => sim.close() };
  } catch (error) {
    return { line: `upstream simulator not started (${(error as Error).message}); demo channels use ${url.origin}`, close: async () => {} };
  }
}

/** The admin token's line at start: the token itself only when it was just generated (DESIGN.md:
 * "generated and printed at start when unset"), never one from ADMIN_TOKEN or one saved earlier,
 * so that start logs do not carry the operator's credential at every restart. */
function adminTokenLine(settings: Settings, token: { value: string; generated: boolean }): string {
  if (settings.adminToken) return 'admin token: from ADMIN_TOKEN (not printed)';
  const file = `${settings.dataDir}/admin-token`;
  return token.generated ? `admin token: ${token.value} (generated; saved in ${file})` : `admin token: saved in ${file} (not printed)`;
}

/**
 * The serving process's log: stdout, written asynchronously in batches (up to 4 KiB, at most
 * LOG_FLUSH_MS = 250 ms late) instead of one synchronous write per line. One write per access line
 * cost the request path a system call per call, and when stdout is a pipe whose reader runs on
 * another core, a wake-up of that reader as well (0.2–0.3 ms of CPU per call measured at one
 * connection). Whatever is still buffered is written out synchronously when the process exits.
 */
function logDestination() {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: LOG_FLUSH_MS });
  process.once('exit', () => {
    try {
      destination.flushSync();
    } catch {
      // stdout already closed: nothing left to write to
    }
  });
  return destination;
}
const LOG_FLUSH_MS = 250;

async function serve(settings: Settings) {
  const destination = logDestination();
  const logger = pino({ level: settings.logLevel, serializers: requestSerializers }, destination);
  // The log's last batch written before the process exits (the exit hook only writes what no write is carrying).
  // At most a second: a stdout nobody reads any more must not hold the exit.
  const logFlushed = () =>
    new Promise<void>((resolve) => {
      setTimeout(resolve, 1000).unref();
      destination.flush(() => resolve());
    });
  // Before the gateway reads it: whether this start generated the token decides what is printed.
  const token = adminTokenOf(settings);
  const simulator = await startDemoSimulator(settings);
  const gateway = await createGateway(settings, { logger });
  await gateway.app.listen({ port: settings.port, host: settings.host });
  const where = settings.databaseUrl ? 'Postgres (DATABASE_URL)' : `embedded PGlite in ${settings.dataDir}`;
  process.stdout.write(
    [
      `gateway listening on http://${settings.host}:${settings.port}`,
      `storage: ${where}; events: ${settings.eventStoreUrl ? 'EventStoreDB (EVENTSTORE_URL)' : 'events table'}`,
      adminTokenLine(settings, token),
      `web console: http://${settings.host}:${settings.port}/console/ (sign-in link: npx gateway accounts login-link ACCOUNT_ID)`,
      ...(simulator.line ? [simulator.line] : []),
      '',
    ].join('\n'),
  );
  // SIGTERM or SIGINT: a graceful shutdown (Gateway.close), then exit 0. A second signal ends the
  // grace at once (the calls in flight are ended and settled); a third exits without waiting.
  let signals = 0;
  const shutdown = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals >= 3) {
      logger.warn({ signal }, 'third signal: exiting without finishing the shutdown');
      process.exit(1);
    }
    if (signals === 2) {
      logger.warn({ signal }, 'second signal: the calls in flight are ended now');
      void gateway.close();
      return;
    }
    logger.info({ signal }, 'signal received: shutting down');
    gateway
      .close()
      .then(() => simulator.close())
      .then(logFlushed)
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  // SIGHUP: the config file is read again, validated whole and applied; a bad file is refused and logged.
  process.on('SIGHUP', () => {
    gateway.reloadConfig('sighup').then(
      (outcome) => (outcome.ok ? undefined : logger.error({ errors: outcome.errors }, 'configuration reload refused; the running config stays')),
      (error: unknown) => logger.error({ err: error }, 'configuration reload failed; the running config stays'),
    );
  });
}

/** `accounts login-link ID`: the link alone on its line (to paste into a message), and its expiry. */
async function loginLink(settings: Settings, accountId: string) {
  const response = await adminRequest(settings, 'POST', `/accounts/${accountId}/login-link`, {});
  if (!response.ok) {
    process.stdout.write(`${response.text}\n`);
    process.exitCode = 1;
    return;
  }
  const answer = JSON.parse(response.text) as { url: string; expires_at: number };
  process.stdout.write(`${answer.url}\nworks once, until ${new Date(answer.expires_at * 1000).toISOString()}\n`);
}

async function withRunner<T>(
  settings: Settings,
  fn: (runner: ProjectionRunner, storage: Awaited<ReturnType<typeof openStorage>>) => Promise<T>,
  options: RunnerOptions = {},
) {
  const storage = await openStorage(settings);
  try {
    const runner = new ProjectionRunner(storage.sql, storage.store, allProjections, options);
    await runner.migrate();
    return await fn(runner, storage);
  } finally {
    await storage.close();
  }
}

async function adminRequest(settings: Settings, method: string, path: string, body?: unknown, raw?: { bytes: Uint8Array; contentType: string }) {
  const base = process.env.GATEWAY_URL?.trim() || `http://${settings.host}:${settings.port}`;
  const token = adminTokenOf(settings).value;
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (raw) headers['content-type'] = raw.contentType;
  else if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers,
    ...(raw ? { body: raw.bytes } : body !== undefined ? { body: JSON.stringify(body) } : {}),
  }).catch((error: unknown) => {
    throw new Error(`cannot reach the gateway at ${base} (${(error as Error).message}); start it with "gateway serve" or set GATEWAY_URL`);
  });
  return { ok: response.ok, status: response.status, text: await response.text() };
}

async function admin(settings: Settings, method: string, path: string, body?: unknown) {
  const response = await adminRequest(settings, method, path, body);
  process.stdout.write(`${response.text}\n`);
  if (!response.ok) process.exitCode = 1;
}

/** A price file: the price object itself (`{input: "0.10", output: "0.40"}`), or `{price: {...}}`. */
async function readPriceFile(path: string): Promise<unknown> {
  const parsed: unknown = parseYaml(await readFile(path, 'utf8'));
  if (parsed && typeof parsed === 'object' && 'price' in parsed) return (parsed as { price: unknown }).price;
  return parsed;
}

interface RerateReport {
  applied: boolean;
  reference: string | null;
  unchanged_calls: number;
  calls: { account_id: string; request_id: string; submitted_at: number; old_cost_usd: string; new_cost_usd: string; difference_usd: string }[];
  accounts: { account_id: string; calls: number; old_cost_usd: string; new_cost_usd: string; difference_usd: string; outcome?: string }[];
  total: { old_cost_usd: string; new_cost_usd: string; difference_usd: string };
}

/** `ledger rerate`: the admin API's answer as two tab-separated tables (calls, then accounts). */
async function rerate(settings: Settings, body: Record<string, unknown>) {
  const response = await adminRequest(settings, 'POST', '/rerates', body);
  if (!response.ok) {
    process.stderr.write(`${response.text}\n`);
    process.exitCode = 1;
    return;
  }
  const report = JSON.parse(response.text) as RerateReport;
  const lines = ['account_id\trequest_id\tsubmitted_at\told_cost_usd\tnew_cost_usd\tdifference_usd'];
  for (const c of report.calls) lines.push([c.account_id, c.request_id, c.submitted_at, c.old_cost_usd, c.new_cost_usd, c.difference_usd].join('\t'));
  lines.push('', `account_id\tcalls\told_cost_usd\tnew_cost_usd\tdifference_usd${report.applied ? '\toutcome' : ''}`);
  for (const a of report.accounts)
    lines.push([a.account_id, a.calls, a.old_cost_usd, a.new_cost_usd, a.difference_usd, ...(report.applied ? [a.outcome] : [])].join('\t'));
  lines.push(
    '',
    `total: ${report.calls.length} call(s) change (${report.unchanged_calls} unchanged); old ${report.total.old_cost_usd}, new ${report.total.new_cost_usd}, difference ${report.total.difference_usd} USD`,
    report.applied ? `applied as adjustment ${report.reference}` : 'dry run: nothing changed (add --apply --reference R to apply)',
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Imports a folder of Markdown files (front matter optional) into a knowledge base,
 * storing each file as the page's source. */
async function importKnowledge(settings: Settings, accountId: string, dir: string, kbId: string, withSources: boolean) {
  const root = resolvePath(dir);
  const files = (await readdir(root, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile() && /\.(md|markdown)$/i.test(entry.name))
    .map((entry) => relativePath(root, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
  if (files.length === 0) throw new UsageError(`no Markdown files under ${root}`);
  const counts = { created: 0, updated: 0, failed: 0 };
  const seen = new Map<string, string>();
  const importOne = async (file: string) => {
    const bytes = await readFile(join(root, file));
    const sourceKey = withSources ? `kb/${accountId}/${kbId}/${file}` : null;
    let imported;
    try {
      imported = pageFromMarkdown(file, bytes.toString('utf8'), sourceKey);
    } catch (error) {
      counts.failed += 1;
      process.stderr.write(`${(error as Error).message}\n`);
      return;
    }
    if (seen.has(imported.id)) process.stderr.write(`warning: ${file} has the same page id "${imported.id}" as ${seen.get(imported.id)}; only one of them is kept\n`);
    seen.set(imported.id, file);
    if (sourceKey) {
      const stored = await adminRequest(settings, 'PUT', `/objects/${sourceKey.split('/').map(encodeURIComponent).join('/')}`, undefined, {
        bytes,
        contentType: 'text/markdown; charset=utf-8',
      });
      if (!stored.ok) {
        counts.failed += 1;
        process.stderr.write(`${file}: source not stored: ${stored.text}\n`);
        return;
      }
    }
    const put = await adminRequest(settings, 'PUT', `/accounts/${accountId}/kbs/${kbId}/pages/${encodeURIComponent(imported.id)}`, imported.page);
    if (!put.ok) {
      counts.failed += 1;
      process.stderr.write(`${file}: ${put.text}\n`);
    } else if (put.status === 201) counts.created += 1;
    else counts.updated += 1;
  };
  // A few files at a time: the server applies each page before answering.
  const queue = [...files];
  await Promise.all(Array.from({ length: 4 }, async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) await importOne(file);
  }));
  process.stdout.write(`imported ${files.length - counts.failed} of ${files.length} files into ${kbId}: ${counts.created} created, ${counts.updated} updated or unchanged, ${counts.failed} failed\n`);
  if (counts.failed > 0) process.exitCode = 1;
}

const orNull = (v: string | undefined, nullWord: string) => (v === undefined ? undefined : v === nullWord ? null : v);

/** A flag's whole number, or null for its "none" word. Anything else is refused here: sent on, a
 * value that is not a number became null in the JSON body, which the API takes as "no limit". */
function wholeNumber(value: string, flag: string, noneWord: string): number | null {
  if (value === noneWord) return null;
  if (!/^\d{1,15}$/.test(value)) throw new UsageError(`${flag} takes a whole number or "${noneWord}", not "${value}"`);
  return Number(value);
}

/** `--models a,b`; `all` for every model (null), `none` for no model (an empty allow-list). An empty
 * value is refused: `--models "$UNSET"` must not lock the key out of every model. */
function allowList(value: string): string[] | null {
  if (value === 'all') return null;
  if (value === 'none') return [];
  const ids = value.split(',').map((m) => m.trim()).filter(Boolean);
  if (ids.length === 0) throw new UsageError('--models takes model ids separated by commas, "all" or "none"');
  return ids;
}

function keyBody(values: Record<string, string | boolean | undefined>) {
  const models = values.models as string | undefined;
  const expires = values['expires-at'] as string | undefined;
  const cap = orNull(values['spend-cap'] as string | undefined, 'none');
  const group = orNull(values.group as string | undefined, 'none');
  return {
    ...(values.name !== undefined ? { name: values.name } : {}),
    ...(models !== undefined ? { allowed_models: allowList(models) } : {}),
    ...(expires !== undefined ? { expires_at: wholeNumber(expires, '--expires-at', 'never') } : {}),
    ...(cap !== undefined ? { spend_cap_usd: cap } : {}),
    ...(group !== undefined ? { group } : {}),
    ...(values.disable || values.disabled ? { enabled: false } : values.enable ? { enabled: true } : {}),
  };
}

/** `accounts limits ID --rpm N`: the limit not named keeps its value (the API's PUT sets both). */
async function setLimits(settings: Settings, accountId: string, rpm: string | undefined, concurrency: string | undefined) {
  if (rpm === undefined && concurrency === undefined) throw new UsageError('accounts limits needs --rpm and/or --concurrency (a whole number, or "none" for no limit)');
  const body: { rpm?: number | null; concurrency?: number | null } = {};
  if (rpm !== undefined) body.rpm = wholeNumber(rpm, '--rpm', 'none');
  if (concurrency !== undefined) body.concurrency = wholeNumber(concurrency, '--concurrency', 'none');
  if (rpm === undefined || concurrency === undefined) {
    const account = await adminRequest(settings, 'GET', `/accounts/${accountId}`);
    if (!account.ok) {
      process.stdout.write(`${account.text}\n`);
      process.exitCode = 1;
      return;
    }
    const current = (JSON.parse(account.text) as { limits: { rpm: number | null; concurrency: number | null } }).limits;
    body.rpm = rpm === undefined ? current.rpm : body.rpm!;
    body.concurrency = concurrency === undefined ? current.concurrency : body.concurrency!;
  }
  return admin(settings, 'PUT', `/accounts/${accountId}/limits`, body);
}

export async function main(argv: string[]): Promise<void> {
  const settings = settingsFromEnv();
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      account: { type: 'string' },
      model: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      price: { type: 'string' },
      apply: { type: 'boolean' },
      reference: { type: 'string' },
      reason: { type: 'string' },
      rpm: { type: 'string' },
      concurrency: { type: 'string' },
      name: { type: 'string' },
      models: { type: 'string' },
      'expires-at': { type: 'string' },
      'spend-cap': { type: 'string' },
      group: { type: 'string' },
      disabled: { type: 'boolean' },
      disable: { type: 'boolean' },
      enable: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      title: { type: 'string' },
      readers: { type: 'string' },
      kb: { type: 'string' },
      'no-sources': { type: 'boolean' },
      parked: { type: 'boolean' },
      'default-model': { type: 'string' },
      status: { type: 'string' },
      creator: { type: 'string' },
      prompt: { type: 'string' },
      'web-search': { type: 'boolean' },
      'no-web-search': { type: 'boolean' },
      drawing: { type: 'boolean' },
      'no-drawing': { type: 'boolean' },
      kbs: { type: 'string' },
      temperature: { type: 'string' },
      unpublished: { type: 'boolean' },
      publish: { type: 'boolean' },
      by: { type: 'string' },
    },
  });
  const [group, action, ...rest] = positionals;
  const need = (value: string | undefined, what: string) => {
    if (!value) throw new UsageError(`missing ${what}`);
    return value;
  };
  if (values.help || group === undefined || group === 'help') {
    process.stdout.write(USAGE);
    return;
  }

  switch (`${group} ${action ?? ''}`.trim()) {
    case 'serve':
      return serve(settings);

    case 'projections rebuild':
      return withRunner(settings, async (runner) => {
        const names = rest[0] ? [runner.byName(rest[0]).name] : runner.projections.map((p) => p.name);
        const started = performance.now();
        const tty = process.stderr.isTTY;
        let told = started;
        let events = 0;
        await runner.rebuild(names, (progress) => {
          events = progress.events;
          const now = performance.now();
          if (now - told < 1000) return;
          told = now;
          // A terminal sees one line rewritten; a log file one line a second.
          process.stderr.write(`${tty ? '\r\x1b[2K' : ''}${progressLine(progress, now - started)}${tty ? '' : '\n'}`);
        });
        if (tty && told !== started) process.stderr.write('\r\x1b[2K');
        process.stdout.write(`${finalLine(names, events, performance.now() - started)}\n`);
      });

    case 'projections run': {
      // The embedded database is locked to the process that opened it: the gateway itself applies the log there.
      if (settings.databaseUrl === undefined) throw new UsageError('projections run needs DATABASE_URL (the embedded database is the serving gateway\'s alone)');
      // On stdout, as `serve` logs.
      const say = (line: string) => process.stdout.write(`${new Date().toISOString()} projections: ${line}\n`);
      const onParked: RunnerOptions['onParked'] = (projection, parked) =>
        say(`${projection} parked ${parked.length} event(s) it cannot apply (gateway ledger verify --parked lists them)`);
      return withRunner(
        settings,
        async (runner) => {
          const stop = new Promise<string>((resolve) => {
            for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve(signal));
          });
          say('applying the log to the read models (SIGINT or SIGTERM stops)');
          runner.start((error) => say(`stopped on an error, retrying in a second: ${error instanceof Error ? error.message : String(error)}`));
          say(`${await stop}: stopping after the batch in hand`);
          await runner.stop();
        },
        // Gateways with PROJECTIONS=external wait for this worker after each admin command: it looks for new events often.
        { pollMs: PROJECTION_WORKER_POLL_MS, onParked },
      );
    }

    case 'projections status':
      return withRunner(settings, async (runner) => {
        const parked = await runner.parkedCounts();
        for (const p of runner.projections) {
          const at = await runner.checkpoint(p.name);
          process.stdout.write(`${p.name}\tcommit=${at.commit}\tprepare=${at.prepare}\tparked=${parked.get(p.name) ?? 0}\n`);
        }
      });

    case 'ledger verify':
      return withRunner(settings, async (runner, storage) => {
        await runner.catchUpToHead();
        if (values.parked) {
          const parked = await runner.parkedEvents();
          for (const e of parked)
            process.stdout.write(
              `PARKED ${e.projection} ${e.streamId} revision=${e.revision} type=${e.type} event=${e.eventId} position=${e.position.commit}/${e.position.prepare}: ${e.error}\n`,
            );
          process.stdout.write(parked.length === 0 ? 'no parked events\n' : `${parked.length} parked event(s)\n`);
          if (parked.length > 0) process.exitCode = 1;
          return;
        }
        const differences = await verifyLedger(storage.store, storage.sql, values.account ? { accountId: values.account } : {});
        for (const d of differences) process.stdout.write(`DIFF ${d.subject} ${d.field}: events say ${d.expected}, projection has ${d.actual}\n`);
        process.stdout.write(differences.length === 0 ? 'ledger verified: projections match the events\n' : `${differences.length} difference(s)\n`);
        if (differences.length > 0) process.exitCode = 1;
      });

    case 'ledger rerate':
      return rerate(settings, {
        model: need(values.model, '--model'),
        from: need(values.from, '--from'),
        to: need(values.to, '--to'),
        price: await readPriceFile(need(values.price, '--price')),
        apply: values.apply === true,
        ...(values.reference !== undefined ? { reference: values.reference } : {}),
        ...(values.reason !== undefined ? { reason: values.reason } : {}),
      });

    case 'accounts create':
      return admin(settings, 'POST', '/accounts', { name: need(rest[0], 'NAME'), ...(values.group !== undefined ? { group: values.group } : {}) });
    case 'accounts list':
      return admin(settings, 'GET', '/accounts');
    case 'accounts show':
      return admin(settings, 'GET', `/accounts/${need(rest[0], 'ID')}`);
    case 'accounts topup':
      return admin(settings, 'POST', `/accounts/${need(rest[0], 'ID')}/topups`, {
        amount_usd: need(rest[1], 'AMOUNT_USD'),
        reference: values.reference ?? `cli-${Date.now()}`,
      });
    case 'accounts limits':
      return setLimits(settings, need(rest[0], 'ID'), values.rpm, values.concurrency);
    case 'accounts group': {
      const bound = need(rest[1], 'GROUP (or none)');
      return admin(settings, 'PUT', `/accounts/${need(rest[0], 'ID')}/group`, { group: bound === 'none' ? null : bound });
    }
    case 'accounts deactivate':
      return admin(settings, 'POST', `/accounts/${need(rest[0], 'ID')}/deactivate`, values.reason ? { reason: values.reason } : {});
    case 'accounts reactivate':
      return admin(settings, 'POST', `/accounts/${need(rest[0], 'ID')}/reactivate`, {});
    case 'accounts login-link':
      return loginLink(settings, need(rest[0], 'ID'));
    case 'accounts ledger':
      return admin(settings, 'GET', `/accounts/${need(rest[0], 'ID')}/ledger`);
    case 'keys create':
      return admin(settings, 'POST', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/keys`, { ...keyBody(values), name: need(values.name, '--name') });
    case 'keys list':
      return admin(settings, 'GET', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/keys`);
    case 'keys update':
      return admin(settings, 'PATCH', `/keys/${need(rest[0], 'KEY_ID')}`, keyBody(values));
    case 'keys revoke':
      return admin(settings, 'POST', `/keys/${need(rest[0], 'KEY_ID')}/revoke`, {});
    case 'keys delete':
      return admin(settings, 'DELETE', `/keys/${need(rest[0], 'KEY_ID')}`);
    case 'keys reveal':
      return admin(settings, 'GET', `/keys/${need(rest[0], 'KEY_ID')}/reveal`);
    case 'kb create':
      return admin(settings, 'POST', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/kbs`, {
        kb_id: need(rest[1], 'KB_ID'),
        title: need(values.title, '--title'),
        reader_account_ids: (values.readers ?? '').split(',').map((r) => r.trim()).filter(Boolean),
      });
    case 'kb update':
      return admin(settings, 'PATCH', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/kbs/${need(rest[1], 'KB_ID')}`, {
        ...(values.title !== undefined ? { title: values.title } : {}),
        ...(values.readers !== undefined ? { reader_account_ids: values.readers.split(',').map((r) => r.trim()).filter(Boolean) } : {}),
      });
    case 'kb import':
      return importKnowledge(settings, need(rest[0], 'ACCOUNT_ID'), need(rest[1], 'DIR'), values.kb ?? 'default', !values['no-sources']);
    case 'enterprise set':
      return admin(settings, 'PUT', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/enterprise`, {
        allowed_models: values.models === undefined || values.models === 'all' ? null : list(values.models),
        default_model: values['default-model'] ?? null,
      });
    case 'enterprise show':
      return admin(settings, 'GET', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/enterprise`);
    case 'enterprise member':
      return admin(settings, 'PUT', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/members/${need(rest[1], 'MEMBER_ID')}`, { role: need(rest[2], 'ROLE (admin|member)') });
    case 'enterprise remove-member':
      return admin(settings, 'DELETE', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/members/${need(rest[1], 'MEMBER_ID')}`);
    case 'enterprise requests':
      return admin(settings, 'GET', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/key-requests${values.status ? `?status=${encodeURIComponent(values.status)}` : ''}`);
    case 'enterprise audit':
      return admin(settings, 'GET', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/audit`);
    case 'agents create':
      return admin(settings, 'POST', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/agents`, {
        ...agentBody(values),
        name: need(values.name, '--name'),
        creator_account_id: need(values.creator, '--creator'),
        system_prompt: need(values.prompt, '--prompt'),
      });
    case 'agents list':
      return admin(settings, 'GET', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/agents`);
    case 'agents update':
      return admin(settings, 'PATCH', `/agents/${need(rest[0], 'AGENT_ID')}`, agentBody(values));
    case 'agents delete':
      return admin(settings, 'DELETE', `/agents/${need(rest[0], 'AGENT_ID')}`);
    case 'agents key':
      return admin(settings, 'POST', `/agents/${need(rest[0], 'AGENT_ID')}/keys`, {
        name: need(values.name, '--name'),
        issued_by: need(values.by, '--by'),
        ...(values['spend-cap'] !== undefined ? { spend_cap_usd: values['spend-cap'] } : {}),
      });
    case 'agents request-key':
      return admin(settings, 'POST', `/agents/${need(rest[0], 'AGENT_ID')}/key-requests`, {
        name: need(values.name, '--name'),
        requested_by: need(values.by, '--by'),
        spend_cap_usd: need(values['spend-cap'], '--spend-cap'),
      });
    case 'agents approve':
      return admin(settings, 'POST', `/key-requests/${need(rest[0], 'REQUEST_ID')}/approve`, { approved_by: need(values.by, '--by') });
    case 'agents reject':
      return admin(settings, 'POST', `/key-requests/${need(rest[0], 'REQUEST_ID')}/reject`, {
        rejected_by: need(values.by, '--by'),
        ...(values.reason !== undefined ? { reason: values.reason } : {}),
      });
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
}

const list = (text: string) => text.split(',').map((item) => item.trim()).filter(Boolean);

/** An agent's settings from the flags given (only those: an update changes nothing else). */
function agentBody(values: Record<string, string | boolean | undefined>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (typeof values.name === 'string') body.name = values.name;
  if (typeof values.prompt === 'string') body.system_prompt = values.prompt;
  if (typeof values.model === 'string') body.model = values.model === 'none' ? null : values.model;
  if (typeof values.kbs === 'string') body.kb_ids = list(values.kbs);
  if (typeof values.temperature === 'string') {
    const t = Number(values.temperature);
    if (values.temperature !== 'none' && !(t >= 0 && t <= 2)) throw new UsageError('--temperature must be between 0 and 2, or none');
    body.temperature = values.temperature === 'none' ? null : t;
  }
  if (values['web-search'] || values['no-web-search']) body.web_search = values['web-search'] === true;
  if (values.drawing || values['no-drawing']) body.drawing = values.drawing === true;
  if (values.publish || values.unpublished) body.published = values.publish === true;
  return body;
}

/** parseArgs' refusals (an unknown or misspelt flag, a flag without its value) are usage errors. */
const isUsageError = (error: unknown) => error instanceof UsageError || String((error as { code?: unknown } | null)?.code).startsWith('ERR_PARSE_ARGS');

main(process.argv.slice(2)).catch((error: unknown) => {
  if (isUsageError(error)) process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
  else if (error instanceof SettingError) process.stderr.write(`gateway: ${error.message}\n`);
  // A stack trace is for whoever debugs the gateway (LOG_LEVEL=debug), not for its operator.
  else if (/^(debug|trace)$/.test(process.env.LOG_LEVEL?.trim() ?? '')) process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  else process.stderr.write(`gateway: ${(error as Error).message ?? String(error)}\n`);
  process.exitCode = isUsageError(error) ? 2 : 1;
});
