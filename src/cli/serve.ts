// `gateway serve`: the serving process: its log destination, the demo simulator, the start lines, and
// the signals (SIGTERM/SIGINT: graceful shutdown; SIGHUP: config reload).
import pino from 'pino';
import { startSimulator } from '../simulator';
import { requestSerializers } from '../runtime/app';
import { LOG_REDACT } from '../metrics/redact';
import { createGateway } from '../runtime/gateway';
import { adminTokenOf, type Settings } from '../runtime/settings';

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

export async function serve(settings: Settings) {
  const destination = logDestination();
  const logger = pino({ level: settings.logLevel, serializers: requestSerializers, redact: LOG_REDACT }, destination);
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
  // Printed once the signals are handled: a supervisor that signals as soon as it reads this gets a graceful shutdown.
  process.stdout.write(
    [
      `gateway listening on http://${settings.host}:${settings.port}`,
      `storage: ${gateway.storage.description}; events: ${settings.eventStoreUrl ? 'EventStoreDB (EVENTSTORE_URL)' : 'events table'}`,
      adminTokenLine(settings, token),
      `web console: http://${settings.host}:${settings.port}/console/ (sign-in link: npx gateway accounts login-link ACCOUNT_ID)`,
      ...(simulator.line ? [simulator.line] : []),
      '',
    ].join('\n'),
  );
  // SIGHUP: the config file is read again, validated whole and applied; a bad file is refused and logged.
  process.on('SIGHUP', () => {
    gateway.reloadConfig('sighup').then(
      (outcome) => (outcome.ok ? undefined : logger.error({ errors: outcome.errors }, 'configuration reload refused; the running config stays')),
      (error: unknown) => logger.error({ err: error }, 'configuration reload failed; the running config stays'),
    );
  });
}
