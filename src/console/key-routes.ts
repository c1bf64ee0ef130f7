import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../commands/ledger';
import type { ModelRegistry } from '../config/registry';
import { UsdString } from '../config/schema';
import type { Position } from '../events/store/port';
import { parseUsd } from '../money/usd';
import { accountKeys } from '../projections/keys/queries';
import type { Sql } from '../storage/sql';
import { doc, FORM_BYTES, isDateText } from './forms';
import { ConsoleRefusal, field } from './guard';
import { html, type Html } from './html';
import { keysPage, revealConfirmPage, secretBox, type KeyForm } from './keys-page';
import { notice, type ConsoleViewer } from './layout';
import { isTimeZone, startOfDay } from './zone';

/** The API keys pages: create (a refused form names the field and keeps what was typed), reveal,
 * enable, disable, revoke, delete. */

const FIELDS = ['name', 'allowed_models', 'expires_at', 'spend_cap_usd', 'tz'] as const;
/** The form's labels, as the refusal names the fields. */
const LABELS: Record<string, string> = { name: 'Name', allowed_models: 'Allowed models', expires_at: 'Expires on', spend_cap_usd: 'Spend cap', tz: 'Time zone' };

const NewKey = z.object({
  name: z.string().min(1, 'give the key a name').max(200, 'a name is at most 200 characters'),
  allowed_models: z.string().max(20_000, 'the list is at most 20,000 characters'),
  expires_at: z.string().refine((text) => text === '' || isDateText(text), 'write a day as YYYY-MM-DD, e.g. 2027-01-31'),
  spend_cap_usd: z
    .string()
    .refine((text) => text === '' || UsdString.safeParse(text).success, 'write an amount in US dollars with digits and at most one decimal point, e.g. 10 or 12.50 (no $ sign, no commas, at most 9 decimals)')
    .refine((text) => !UsdString.safeParse(text).success || parseUsd(text) <= parseUsd('1000000000'), 'a spend cap is at most 1000000000 USD'),
  tz: z.string().max(64).refine((text) => text === '' || isTimeZone(text), 'is not a time zone'),
});

export interface KeyRouteOptions {
  readonly ledger: Ledger;
  readonly sql: Sql;
  readonly registry: ModelRegistry;
  readonly settled: (position: Position | null) => Promise<void>;
  readonly now: () => number;
  readonly viewerOf: (request: FastifyRequest) => ConsoleViewer;
  readonly send: (reply: FastifyReply, status: number, title: string, body: Html, viewer: ConsoleViewer | null, current?: string) => FastifyReply;
}

export function keyRoutes(app: FastifyInstance, options: KeyRouteOptions): void {
  const { ledger, sql, registry, settled, now, viewerOf, send } = options;
  const callableModels = registry.config.models.filter((m) => m.callable !== false).map((m) => m.id);
  const keysView = async (request: FastifyRequest, reply: FastifyReply, status: number, top: Html | null, form?: KeyForm) => {
    const viewer = viewerOf(request);
    return send(reply, status, 'API keys', keysPage(viewer, await accountKeys(sql, viewer.accountId), now(), top, callableModels, form), viewer, '/console/keys');
  };
  const DONE: Record<string, string> = { enabled: 'The key is enabled.', disabled: 'The key is disabled: calls with it are refused until you enable it.', revoked: 'The key is revoked: calls with it are refused.', deleted: 'The key is deleted.' };

  app.get<{ Querystring: { done?: string } }>('/keys', { config: { openapi: doc('consoleKeys', 'API keys: list and create', 'GET') } }, async (request, reply) =>
    keysView(request, reply, 200, request.query.done && DONE[request.query.done] ? notice(DONE[request.query.done]!) : null),
  );

  app.post('/keys', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleCreateKey', 'Create a key: the raw key is shown once in the answer', 'POST') } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const values = Object.fromEntries(FIELDS.map((name) => [name, field(request.body, name)]));
    const refuse = (status: number, errors: Record<string, string>, why?: string) =>
      keysView(request, reply, status, notice(`The key was not created: ${why ?? Object.entries(errors).map(([name, error]) => `${LABELS[name]}: ${error}`).join('; ')}.`, 'error'), { values, errors });
    const parsed = NewKey.safeParse(Object.fromEntries(FIELDS.map((name) => [name, values[name]!.trim()])));
    if (!parsed.success) {
      const errors: Record<string, string> = {};
      for (const issue of parsed.error.issues) errors[String(issue.path[0])] ??= issue.message;
      return refuse(400, errors);
    }
    const body = parsed.data;
    const models = body.allowed_models.split(',').map((m) => m.trim()).filter((m) => m !== '');
    const unknown = models.filter((m) => !registry.resolve(m));
    if (unknown.length > 0) return refuse(400, { allowed_models: `no model is called ${unknown.slice(0, 10).join(', ')}: pick ids from the list` });
    // The day is the holder's (the zone console.js sends; UTC without a script), as every date the console shows.
    const expiresAt = body.expires_at === '' ? null : startOfDay(body.expires_at, body.tz || 'UTC');
    if (expiresAt !== null && expiresAt <= now()) return refuse(400, { expires_at: `${body.expires_at} has begun already: pick a later day` });
    const result = await ledger.issueKey(
      viewer.accountId,
      { name: body.name, allowed_models: models.length > 0 ? models : null, expires_at: expiresAt, enabled: true, spend_cap: body.spend_cap_usd === '' ? null : parseUsd(body.spend_cap_usd) },
      viewer.actor,
    );
    if (!result.ok) return refuse(409, {}, result.error.message);
    await settled(result.position);
    return keysView(request, reply, 201, secretBox(`Your new key “${body.name}”. It is shown this once:`, result.raw));
  });

  /** The viewer's own key, or a 404 page: another account's key is as absent as an unknown one. */
  async function ownKey(request: FastifyRequest<{ Params: { id: string } }>) {
    const viewer = viewerOf(request);
    const key = (await accountKeys(sql, viewer.accountId)).find((k) => k.keyId === request.params.id);
    if (!key) throw new ConsoleRefusal(404, 'Not found', html`${notice('No such key in your account.', 'error')}<p><a href="/console/keys">Your keys</a></p>`);
    return key;
  }

  app.get<{ Params: { id: string } }>('/keys/:id/reveal', { config: { openapi: doc('consoleRevealConfirm', 'Confirm revealing a key', 'GET') } }, async (request, reply) => {
    const key = await ownKey(request);
    return send(reply, 200, 'Reveal key', revealConfirmPage(viewerOf(request), key), viewerOf(request), '/console/keys');
  });

  app.post<{ Params: { id: string } }>('/keys/:id/reveal', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleRevealKey', 'Reveal a key (recorded as an audit event)', 'POST') } }, async (request, reply) => {
    const key = await ownKey(request);
    const result = await ledger.revealKey(key.keyId, viewerOf(request).actor);
    if (!result.ok) return keysView(request, reply, 409, notice(`The key cannot be revealed: ${result.error.message}.`, 'error'));
    await settled(result.position);
    return keysView(request, reply, 200, secretBox(`The key “${key.name}”:`, result.raw));
  });

  const keyAction = (action: 'enable' | 'disable' | 'revoke' | 'delete', done: string, run: (keyId: string, actor: string) => ReturnType<Ledger['revokeKey']>) =>
    app.post<{ Params: { id: string } }>(`/keys/:id/${action}`, { bodyLimit: FORM_BYTES, config: { openapi: doc(`console${action[0]!.toUpperCase()}${action.slice(1)}Key`, `${action[0]!.toUpperCase()}${action.slice(1)} a key`, 'POST') } }, async (request, reply) => {
      const key = await ownKey(request);
      const result = await run(key.keyId, viewerOf(request).actor);
      if (!result.ok) return keysView(request, reply, 409, notice(`Nothing changed: ${result.error.message}.`, 'error'));
      await settled(result.position);
      return reply.redirect(`/console/keys?done=${done}`, 303);
    });
  keyAction('enable', 'enabled', (id, actor) => ledger.updateKey(id, { enabled: true }, actor));
  keyAction('disable', 'disabled', (id, actor) => ledger.updateKey(id, { enabled: false }, actor));
  keyAction('revoke', 'revoked', (id, actor) => ledger.revokeKey(id, 'revoked in the console', actor));
  keyAction('delete', 'deleted', (id, actor) => ledger.deleteKey(id, actor));
}
