// The commands that open the storage directly (`projections …`, `ledger verify`): in embedded mode with the
// server stopped, on Postgres beside live gateways. Loaded by src/cli.ts for these commands only.
import { verifyLedger } from '../projections/verify';
import { allProjections } from '../projections';
import { ProjectionRunner, type RunnerOptions } from '../projections/runner/runner';
import { finalLine, progressLine } from '../projections/runner/rebuild-progress';
import type { Settings } from '../runtime/settings';
import { openStorage } from '../runtime/storage';
import type { Options } from './options';
import { UsageError } from './usage';

/** How often `projections run` looks for new events when it has caught up. */
const PROJECTION_WORKER_POLL_MS = 20;

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

/** Runs the storage command `group action …rest`; false when there is no such command. */
export async function runStorageCommand(settings: Settings, group: string, action: string | undefined, rest: readonly string[], values: Options): Promise<boolean> {
  switch (`${group} ${action ?? ''}`.trim()) {
    case 'projections rebuild':
      await withRunner(settings, async (runner) => {
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
      return true;

    case 'projections run': {
      // The embedded database is locked to the process that opened it: the gateway itself applies the log there.
      if (settings.databaseUrl === undefined) throw new UsageError('projections run needs DATABASE_URL (the embedded database is the serving gateway\'s alone)');
      // On stdout, as `serve` logs.
      const say = (line: string) => process.stdout.write(`${new Date().toISOString()} projections: ${line}\n`);
      const onParked: RunnerOptions['onParked'] = (projection, parked) =>
        say(`${projection} parked ${parked.length} event(s) it cannot apply (gateway ledger verify --parked lists them)`);
      await withRunner(
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
      return true;
    }

    case 'projections status':
      await withRunner(settings, async (runner) => {
        const parked = await runner.parkedCounts();
        for (const p of runner.projections) {
          const at = await runner.checkpoint(p.name);
          process.stdout.write(`${p.name}\tcommit=${at.commit}\tprepare=${at.prepare}\tparked=${parked.get(p.name) ?? 0}\n`);
        }
      });
      return true;

    case 'ledger verify':
      await withRunner(settings, async (runner, storage) => {
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
      return true;

    default:
      return false;
  }
}
