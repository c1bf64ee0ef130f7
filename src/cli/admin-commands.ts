// The commands that talk to a running gateway's admin API (README, "Command line"): each command line
// turned into its request, lists printed as tables (src/cli/output.ts). Loaded by src/cli.ts for these
// commands only: nothing of the gateway itself is imported here.
import { admin, adminList, adminSay, importKnowledge, loginLink, readPriceFile, rerate, setLimits, type Client } from './admin-client';
import { agentBody, keyBody, list } from './flags';
import type { Column } from './output';
import type { Options } from './options';
import { UsageError } from './usage';

const ACCOUNT_COLUMNS: Column[] = [['id', 'id'], ['name', 'name'], ['status', 'status'], ['balance_usd', 'balance_usd'], ['available_usd', 'available_usd'], ['group', 'group'], ['created_at', 'created_at']];
const SIGNUP_COLUMNS: Column[] = [
  ['account_id', 'account_id'], ['email', 'email'], ['name', 'name'], ['status', 'status'], ['verified_at', 'verified_at'], ['trial_granted', 'trial_granted'],
  ['signup_ip', 'signup_ip'], ['created_at', 'created_at'],
];
const KEY_COLUMNS: Column[] = [
  ['id', 'id'], ['name', 'name'], ['prefix', 'prefix'], ['status', 'status'], ['models', 'allowed_models'], ['spend_cap_usd', 'spend_cap_usd'],
  ['used_usd', 'used_usd'], ['group', 'group'], ['expires_at', 'expires_at'], ['last_used_at', 'last_used_at'],
];
const CHANNEL_COLUMNS: Column[] = [
  ['id', 'id'], ['protocol', 'protocol'], ['group', 'group'], ['priority', 'priority'], ['status', 'status'], ['disabled_by', 'disabled_by'],
  ['cooling_until', 'cooling_until'], ['success_rate', (c) => (typeof c.success_rate === 'number' ? `${(c.success_rate * 100).toFixed(1)}%` : null)],
  ['latency_ms', 'latency_ms'], ['last_error', 'last_error'],
];
const AGENT_COLUMNS: Column[] = [['id', 'id'], ['name', 'name'], ['model', 'model'], ['status', 'status'], ['published', 'published'], ['kb_ids', 'kb_ids'], ['created_at', 'created_at']];
const REQUEST_COLUMNS: Column[] = [['id', 'id'], ['agent_id', 'agent_id'], ['name', 'name'], ['requested_by', 'requested_by'], ['spend_cap_usd', 'spend_cap_usd'], ['status', 'status'], ['key_id', 'key_id'], ['created_at', 'created_at']];
const PAYMENT_COLUMNS: Column[] = [
  ['id', 'id'], ['account_id', 'account_id'], ['amount_usd', 'amount_usd'], ['status', 'status'], ['refunded_usd', 'refunded_usd'],
  ['disputed_usd', 'disputed_usd'], ['provider', 'provider'], ['created_at', 'created_at'],
];
const WEBHOOK_COLUMNS: Column[] = [['at', 'at'], ['outcome', 'outcome'], ['event_type', 'event_type'], ['object_id', 'object_id'], ['event_id', 'event_id'], ['reason', 'reason']];
const AUDIT_COLUMNS: Column[] = [['at', 'at'], ['action', 'action'], ['subject_type', 'subject_type'], ['subject_id', 'subject_id'], ['actor', 'actor']];

/** A channel's state in words: `solo: disabled (operator)`. */
const channelLine = (c: Record<string, unknown>) => `${String(c.id)}: ${String(c.status)}${c.disabled_by ? ` (${String(c.disabled_by)})` : ''}`;

/** Runs the client command `group action …rest`; false when there is no such command. */
export async function runAdminCommand(cli: Client, group: string, action: string | undefined, rest: readonly string[], values: Options): Promise<boolean> {
  const need = (value: string | undefined, what: string) => {
    if (!value) throw new UsageError(`missing ${what}`);
    return value;
  };
  switch (`${group} ${action ?? ''}`.trim()) {
    case 'channels list':
      return done(adminList(cli, '/channels', CHANNEL_COLUMNS));
    case 'channels enable':
    case 'channels disable': {
      const id = need(rest[0], 'ID');
      return done(adminSay(cli, 'POST', `/channels/${encodeURIComponent(id)}/${action}`, channelLine));
    }
    case 'channels probe': {
      const id = need(rest[0], 'ID');
      return done(adminSay(cli, 'POST', `/channels/${encodeURIComponent(id)}/probe`, (a) => `probe ${String(a.probe)}; ${channelLine(a.channel as Record<string, unknown>)}`));
    }
    case 'config reload':
      return done(adminSay(cli, 'POST', '/config/reload', (a) => `config reloaded from ${String(a.path)}: ${String(a.channels)} channels, ${String(a.models)} models (sha256 ${String(a.digest)})`));
    case 'ledger rerate':
      return done(rerate(cli, {
        model: need(values.model, '--model'),
        from: need(values.from, '--from'),
        to: need(values.to, '--to'),
        price: await readPriceFile(need(values.price, '--price')),
        apply: values.apply === true,
        ...(values.reference !== undefined ? { reference: values.reference } : {}),
        ...(values.reason !== undefined ? { reason: values.reason } : {}),
      }));

    case 'payments list':
      return done(adminList(cli, `/payments${values.account ? `?account_id=${encodeURIComponent(values.account)}` : ''}`, PAYMENT_COLUMNS));
    case 'payments refund':
      return done(admin(cli, 'POST', `/payments/${encodeURIComponent(need(rest[0], 'PAYMENT_ID'))}/refunds`, rest[1] !== undefined ? { amount_usd: rest[1] } : {}));
    case 'payments webhooks':
      return done(adminList(cli, '/payments/webhooks', WEBHOOK_COLUMNS));

    case 'accounts create':
      return done(admin(cli, 'POST', '/accounts', { name: need(rest[0], 'NAME'), ...(values.group !== undefined ? { group: values.group } : {}) }));
    case 'accounts list':
      return done(adminList(cli, '/accounts', ACCOUNT_COLUMNS));
    case 'accounts show':
      return done(admin(cli, 'GET', `/accounts/${need(rest[0], 'ID')}`));
    case 'accounts topup':
      return done(admin(cli, 'POST', `/accounts/${need(rest[0], 'ID')}/topups`, {
        amount_usd: need(rest[1], 'AMOUNT_USD'),
        reference: values.reference ?? `cli-${Date.now()}`,
      }));
    case 'accounts limits':
      return done(setLimits(cli, need(rest[0], 'ID'), values.rpm, values.concurrency));
    case 'accounts group': {
      const bound = need(rest[1], 'GROUP (or none)');
      return done(admin(cli, 'PUT', `/accounts/${need(rest[0], 'ID')}/group`, { group: bound === 'none' ? null : bound }));
    }
    case 'accounts deactivate':
      return done(admin(cli, 'POST', `/accounts/${need(rest[0], 'ID')}/deactivate`, values.reason ? { reason: values.reason } : {}));
    case 'accounts reactivate':
      return done(admin(cli, 'POST', `/accounts/${need(rest[0], 'ID')}/reactivate`, {}));
    case 'accounts login-link':
      return done(loginLink(cli, need(rest[0], 'ID')));
    case 'accounts signups':
      return done(adminList(cli, '/signups', SIGNUP_COLUMNS));
    case 'accounts ledger':
      return done(admin(cli, 'GET', `/accounts/${need(rest[0], 'ID')}/ledger`));
    case 'keys create':
      return done(admin(cli, 'POST', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/keys`, { ...keyBody(values), name: need(values.name, '--name') }));
    case 'keys list':
      return done(adminList(cli, `/accounts/${need(rest[0], 'ACCOUNT_ID')}/keys`, KEY_COLUMNS));
    case 'keys update':
      return done(admin(cli, 'PATCH', `/keys/${need(rest[0], 'KEY_ID')}`, keyBody(values)));
    case 'keys revoke':
      return done(admin(cli, 'POST', `/keys/${need(rest[0], 'KEY_ID')}/revoke`, {}));
    case 'keys delete':
      return done(admin(cli, 'DELETE', `/keys/${need(rest[0], 'KEY_ID')}`));
    case 'keys reveal':
      return done(admin(cli, 'GET', `/keys/${need(rest[0], 'KEY_ID')}/reveal`));
    case 'kb create':
      return done(admin(cli, 'POST', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/kbs`, {
        kb_id: need(rest[1], 'KB_ID'),
        title: need(values.title, '--title'),
        reader_account_ids: (values.readers ?? '').split(',').map((r) => r.trim()).filter(Boolean),
      }));
    case 'kb update':
      return done(admin(cli, 'PATCH', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/kbs/${need(rest[1], 'KB_ID')}`, {
        ...(values.title !== undefined ? { title: values.title } : {}),
        ...(values.readers !== undefined ? { reader_account_ids: values.readers.split(',').map((r) => r.trim()).filter(Boolean) } : {}),
      }));
    case 'kb import':
      return done(importKnowledge(cli, need(rest[0], 'ACCOUNT_ID'), need(rest[1], 'DIR'), values.kb ?? 'default', !values['no-sources']));
    case 'enterprise set':
      return done(admin(cli, 'PUT', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/enterprise`, {
        allowed_models: values.models === undefined || values.models === 'all' ? null : list(values.models),
        default_model: values['default-model'] ?? null,
      }));
    case 'enterprise show':
      return done(admin(cli, 'GET', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/enterprise`));
    case 'enterprise member':
      return done(admin(cli, 'PUT', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/members/${need(rest[1], 'MEMBER_ID')}`, { role: need(rest[2], 'ROLE (admin|member)') }));
    case 'enterprise remove-member':
      return done(admin(cli, 'DELETE', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/members/${need(rest[1], 'MEMBER_ID')}`));
    case 'enterprise requests':
      return done(adminList(cli, `/accounts/${need(rest[0], 'ACCOUNT_ID')}/key-requests${values.status ? `?status=${encodeURIComponent(values.status)}` : ''}`, REQUEST_COLUMNS));
    case 'enterprise audit':
      return done(adminList(cli, `/accounts/${need(rest[0], 'ACCOUNT_ID')}/audit`, AUDIT_COLUMNS));
    case 'agents create':
      return done(admin(cli, 'POST', `/accounts/${need(rest[0], 'ACCOUNT_ID')}/agents`, {
        ...agentBody(values),
        name: need(values.name, '--name'),
        creator_account_id: need(values.creator, '--creator'),
        system_prompt: need(values.prompt, '--prompt'),
      }));
    case 'agents list':
      return done(adminList(cli, `/accounts/${need(rest[0], 'ACCOUNT_ID')}/agents`, AGENT_COLUMNS));
    case 'agents update':
      return done(admin(cli, 'PATCH', `/agents/${need(rest[0], 'AGENT_ID')}`, agentBody(values)));
    case 'agents delete':
      return done(admin(cli, 'DELETE', `/agents/${need(rest[0], 'AGENT_ID')}`));
    case 'agents key':
      return done(admin(cli, 'POST', `/agents/${need(rest[0], 'AGENT_ID')}/keys`, {
        name: need(values.name, '--name'),
        issued_by: need(values.by, '--by'),
        ...(values['spend-cap'] !== undefined ? { spend_cap_usd: values['spend-cap'] } : {}),
      }));
    case 'agents request-key':
      return done(admin(cli, 'POST', `/agents/${need(rest[0], 'AGENT_ID')}/key-requests`, {
        name: need(values.name, '--name'),
        requested_by: need(values.by, '--by'),
        spend_cap_usd: need(values['spend-cap'], '--spend-cap'),
      }));
    case 'agents approve':
      return done(admin(cli, 'POST', `/key-requests/${need(rest[0], 'REQUEST_ID')}/approve`, { approved_by: need(values.by, '--by') }));
    case 'agents reject':
      return done(admin(cli, 'POST', `/key-requests/${need(rest[0], 'REQUEST_ID')}/reject`, {
        rejected_by: need(values.by, '--by'),
        ...(values.reason !== undefined ? { reason: values.reason } : {}),
      }));
    default:
      return false;
  }
}

/** A command ran (its promise settled). */
async function done(run: Promise<unknown>): Promise<true> {
  await run;
  return true;
}
