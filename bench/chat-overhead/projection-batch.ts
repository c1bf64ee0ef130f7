/**
 * What one projection batch costs, in isolation: the three hot projections (accounts, ledger, call log)
 * apply a batch of chat calls (a hold and its settlement each) to Postgres in one transaction, as the
 * runner does, again and again; the gateway-side CPU (`process.cpuUsage`) and the Postgres backend's
 * CPU (`/proc/<pid>/stat`, 10 ms ticks: run enough batches) are averaged over the batches after the first
 * five. Run by hand, pinned like the benchmark's gateway, from the repository root:
 *
 *   taskset -c 1 node --import tsx bench/chat-overhead/projection-batch.ts [--batches 60] [--calls 140]
 *        [--rows-per-statement N]
 *
 * Postgres: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres); a schema of its own,
 * dropped at the end. The backend must be on this machine (its CPU is read from /proc).
 */
import { decodeRecorded } from '../../src/events/catalog';
import { allProjections } from '../../src/projections';
import { WHOLE, type BatchWrites } from '../../src/projections/projection';
import { postgresSql } from '../../src/storage/sql';
import { chatCalls, walletLog } from '../../test/projections/wallet-log';
import { cpuMs } from './proc';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1]!;
}

const BATCHES = Number(arg('batches', '60'));
const CALLS = Number(arg('calls', '140'));
const writes: BatchWrites = process.argv.includes('--rows-per-statement') ? { rowsPerStatement: Number(arg('rows-per-statement', '32')) } : WHOLE;
const url = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const projections = allProjections.filter((p) => ['accounts', 'ledger', 'call-log'].includes(p.name));

async function main() {
  const schema = `projection_batch_${process.pid}`;
  const admin = postgresSql(url);
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const sql = postgresSql(url, { schema, max: 1 });
  try {
    for (const p of projections) await sql.exec(p.schema);
    const [backend] = await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const backendMs = () => cpuMs(backend!.pid);
    let gatewayUs = 0;
    let postgresMs = 0;
    let measured = 0;
    for (let b = 0; b < BATCHES; b++) {
      const items = walletLog(chatCalls(CALLS), `batch${b}`).events.map((recorded) => ({ event: decodeRecorded(recorded), recorded }));
      const cpu = process.cpuUsage();
      const pgBefore = backendMs();
      await sql.transaction(async (tx) => {
        for (const p of projections) await p.applyBatch(tx, items, writes);
      });
      const used = process.cpuUsage(cpu);
      const pgUsed = backendMs() - pgBefore;
      await sql.exec('TRUNCATE ledger_entries, call_log, holds, accounts, key_spend');
      if (b < 5) continue;
      gatewayUs += used.user + used.system;
      postgresMs += pgUsed;
      measured++;
    }
    const rows = writes === WHOLE ? 'one statement a table' : `${writes.rowsPerStatement} rows a statement`;
    process.stdout.write(
      `${measured} batches of ${CALLS} calls (${rows}): gateway-side CPU ${(gatewayUs / measured / 1000).toFixed(2)} ms a batch, ` +
        `Postgres backend CPU ${(postgresMs / measured).toFixed(2)} ms a batch\n`,
    );
  } finally {
    await sql.close();
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  }
}

await main();
