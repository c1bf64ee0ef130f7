// The CLI commands that talk to a running gateway's admin API (GATEWAY_URL, ADMIN_TOKEN or the token
// saved in DATA_DIR), and the ones whose answer it prints in its own form (login links, re-rating tables).
import { readdir, readFile } from 'node:fs/promises';
import { join, relative as relativePath, resolve as resolvePath, sep } from 'node:path';
import { adminTokenOf, type Settings } from '../runtime/settings';
import { failed, table, type Column } from './output';
import { UsageError } from './usage';
import { wholeNumber } from './flags';

/** A client command's context: the settings (where the gateway is, its token) and whether --json was given. */
export interface Client {
  readonly settings: Settings;
  readonly json: boolean;
}

/** `accounts login-link ID`: the link alone on its line (to paste into a message), and its expiry. */
export async function loginLink(cli: Client, accountId: string) {
  const response = await adminRequest(cli.settings, 'POST', `/accounts/${accountId}/login-link`, {});
  if (!response.ok) return failed(response, cli.json);
  if (cli.json) return void process.stdout.write(`${response.text}\n`);
  const answer = JSON.parse(response.text) as { url: string; expires_at: number };
  process.stdout.write(`${answer.url}\nworks once, until ${new Date(answer.expires_at * 1000).toISOString()}\n`);
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
    throw Object.assign(new Error(`cannot reach the gateway at ${base} (${(error as Error).message}); start it with "gateway serve" or set GATEWAY_URL`), { code: 'gateway_unreachable' });
  });
  return { ok: response.ok, status: response.status, text: await response.text() };
}

/** The admin API's answer as it is (JSON) on stdout; an error answer on stderr. */
export async function admin(cli: Client, method: string, path: string, body?: unknown) {
  const response = await adminRequest(cli.settings, method, path, body);
  if (!response.ok) return failed(response, cli.json);
  process.stdout.write(`${response.text}\n`);
}

/** A list (`{data: [...], next_cursor?}`) as a table of `columns`, or its JSON with --json. */
export async function adminList(cli: Client, path: string, columns: readonly Column[]) {
  const response = await adminRequest(cli.settings, 'GET', path);
  if (!response.ok) return failed(response, cli.json);
  if (cli.json) return void process.stdout.write(`${response.text}\n`);
  const answer = JSON.parse(response.text) as { data: Record<string, unknown>[]; next_cursor?: string | null };
  process.stdout.write(answer.data.length === 0 ? '(none)\n' : table(answer.data, columns));
  if (answer.next_cursor) process.stdout.write(`(more after these: --json shows next_cursor ${answer.next_cursor})\n`);
}

/** A command's answer as one line of `say` (the API's JSON with --json). */
export async function adminSay(cli: Client, method: string, path: string, say: (answer: Record<string, unknown>) => string) {
  const response = await adminRequest(cli.settings, method, path, method === 'GET' ? undefined : {});
  if (!response.ok) return failed(response, cli.json);
  process.stdout.write(`${cli.json ? response.text : say(JSON.parse(response.text) as Record<string, unknown>)}\n`);
}

/** A price file: the price object itself (`{input: "0.10", output: "0.40"}`), or `{price: {...}}`. */
export async function readPriceFile(path: string): Promise<unknown> {
  const { parse: parseYaml } = await import('yaml');
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
export async function rerate(cli: Client, body: Record<string, unknown>) {
  const response = await adminRequest(cli.settings, 'POST', '/rerates', body);
  if (!response.ok) return failed(response, cli.json);
  if (cli.json) return void process.stdout.write(`${response.text}\n`);
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
export async function importKnowledge(cli: Client, accountId: string, dir: string, kbId: string, withSources: boolean) {
  const { settings } = cli;
  const { pageFromMarkdown } = await import('../commands/knowledge/markdown');
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

/** `accounts limits ID --rpm N`: the limit not named keeps its value (the API's PUT sets both). */
export async function setLimits(cli: Client, accountId: string, rpm: string | undefined, concurrency: string | undefined) {
  if (rpm === undefined && concurrency === undefined) throw new UsageError('accounts limits needs --rpm and/or --concurrency (a whole number, or "none" for no limit)');
  const body: { rpm?: number | null; concurrency?: number | null } = {};
  if (rpm !== undefined) body.rpm = wholeNumber(rpm, '--rpm', 'none');
  if (concurrency !== undefined) body.concurrency = wholeNumber(concurrency, '--concurrency', 'none');
  if (rpm === undefined || concurrency === undefined) {
    const account = await adminRequest(cli.settings, 'GET', `/accounts/${accountId}`);
    if (!account.ok) return failed(account, cli.json);
    const current = (JSON.parse(account.text) as { limits: { rpm: number | null; concurrency: number | null } }).limits;
    body.rpm = rpm === undefined ? current.rpm : body.rpm!;
    body.concurrency = concurrency === undefined ? current.concurrency : body.concurrency!;
  }
  return admin(cli, 'PUT', `/accounts/${accountId}/limits`, body);
}
