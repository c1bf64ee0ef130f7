import { parseArgs } from 'node:util';
import { verifyLedger } from './projections/verify';
import { allProjections } from './projections';
import { ProjectionRunner, type RunnerOptions } from './projections/runner/runner';
import { finalLine, progressLine } from './projections/runner/rebuild-progress';
import { SettingError, settingsFromEnv, type Settings } from './runtime/settings';
import { openStorage } from './runtime/storage';
import { admin, importKnowledge, loginLink, readPriceFile, rerate, setLimits } from './cli/admin-client';
import { agentBody, isUsageError, keyBody, list } from './cli/flags';
import { serve } from './cli/serve';
import { USAGE, UsageError } from './cli/usage';

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

main(process.argv.slice(2)).catch((error: unknown) => {
  if (isUsageError(error)) process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
  else if (error instanceof SettingError) process.stderr.write(`gateway: ${error.message}\n`);
  // A stack trace is for whoever debugs the gateway (LOG_LEVEL=debug), not for its operator.
  else if (/^(debug|trace)$/.test(process.env.LOG_LEVEL?.trim() ?? '')) process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  else process.stderr.write(`gateway: ${(error as Error).message ?? String(error)}\n`);
  process.exitCode = isUsageError(error) ? 2 : 1;
});
