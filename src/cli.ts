// The command line (`npx gateway …`): the arguments parsed, the command dispatched to the module that runs
// it, loaded only then. `--help`, `--version` and a usage error load nothing but this file's own imports, a
// client command only the admin client (src/cli/admin-commands.ts), never the gateway itself: importing
// the whole gateway for every command cost 0.6-0.8 s of CPU per command (seconds on a loaded machine).
import { parseArgs } from 'node:util';
import { isUsageError } from './cli/flags';
import { OPTIONS, type Options } from './cli/options';
import { USAGE, UsageError, usageOf } from './cli/usage';
import { VERSION } from './runtime/version';

/** The groups whose commands open the storage directly; `ledger rerate` is the admin API's. */
const STORAGE = new Set(['projections rebuild', 'projections run', 'projections status', 'ledger verify']);

export async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS }) as { values: Options; positionals: string[] };
  const [group, action, ...rest] = positionals;
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  if (values.help || group === undefined || group === 'help') {
    // `gateway keys --help`: that group's commands; else the whole page.
    const own = group && group !== 'help' ? usageOf([group, ...(action ? [action] : [])]) : null;
    process.stdout.write(own ? `${own}\n` : USAGE);
    return;
  }
  const { settingsFromEnv } = await import('./runtime/settings');
  const settings = settingsFromEnv();
  const words = `${group} ${action ?? ''}`.trim();
  if (words === 'serve') return (await import('./cli/serve')).serve(settings);
  if (STORAGE.has(words)) {
    await (await import('./cli/storage-commands')).runStorageCommand(settings, group, action, rest, values);
    return;
  }
  const { runAdminCommand } = await import('./cli/admin-commands');
  if (await runAdminCommand({ settings, json: values.json === true }, group, action, rest, values)) return;
  if (usageOf([group]) === null) throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  throw new UsageError(action === undefined ? `missing a ${group} command` : `unknown command "${group} ${action}"`);
}

/** The command's words as typed (before any flag), for its usage. */
function commandWords(argv: readonly string[]): string[] {
  const words: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('-') || words.length === 2) break;
    words.push(arg);
  }
  return words;
}

/** One line saying what is wrong: parseArgs' first sentence (its hint about `--` is for another case). */
const problemOf = (error: Error) => error.message.split(/\.\s/)[0]!.replace(/\.$/, '');

async function fail(error: unknown, argv: readonly string[]): Promise<void> {
  const json = argv.includes('--json');
  if (isUsageError(error)) {
    const words = commandWords(argv);
    const usage = usageOf(words) ?? 'Run "gateway --help" for every command.';
    process.stderr.write(json ? `${JSON.stringify({ error: { code: 'usage', message: problemOf(error as Error) } })}\n` : `gateway: ${problemOf(error as Error)}\n${usage}\n`);
    process.exitCode = 2;
    return;
  }
  process.exitCode = 1;
  const { SettingError } = await import('./runtime/settings');
  const message = (error as Error)?.message ?? String(error);
  if (json) {
    const code = error instanceof SettingError ? 'invalid_setting' : typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : 'error';
    process.stderr.write(`${JSON.stringify({ error: { code, message } })}\n`);
  } else if (!(error instanceof SettingError) && /^(debug|trace)$/.test(process.env.LOG_LEVEL?.trim() ?? '')) {
    // A stack trace is for whoever debugs the gateway (LOG_LEVEL=debug), not for its operator.
    process.stderr.write(`${(error as Error).stack ?? message}\n`);
  } else process.stderr.write(`gateway: ${message}\n`);
}

const argv = process.argv.slice(2);
main(argv).catch((error: unknown) => fail(error, argv));
