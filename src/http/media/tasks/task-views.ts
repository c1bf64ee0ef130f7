import { z } from 'zod';
import { FAMILIES, statusFilter } from '../../../commands/task/families';
import type { TaskFamily } from '../../../events/catalog';
import { GatewayError } from '../../errors';

/** Every media route: an API key, the chat error shape, `x-gateway-trace` on every answer (errors included). */
export const MEDIA_ROUTE = { auth: 'key', shape: 'chat', trace: true } as const;
/** Polls and lists cost nothing, and answer at a balance of 0 or below: a task's own settlement may have
 * taken the balance there, and what it paid for must stay readable. */
export const MEDIA_READ = { ...MEDIA_ROUTE, free: true } as const;

/** The spec's list page: 30 by default, at most 100. */
export const LIST_LIMIT = { default: 30, max: 100 } as const;

/** A task id as a path parameter: opaque, bounded (a longer one names no task). */
/** A task id as the gateway makes them (a UUID): anything else names no task. */
export const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const TaskIdParam = z.string().min(1).max(200).describe('The task id the submission answered with.');

/** The `status` filter of a family's list: comma-separated statuses (or `all`, or a group); else a 400 naming the words. */
export function statusesOf(family: TaskFamily, query: string | undefined): readonly string[] {
  const rules = FAMILIES[family];
  const statuses = statusFilter(rules, query);
  if (statuses === null) {
    const words = [...rules.statuses, ...Object.keys(rules.groups)];
    throw new GatewayError('invalid_request', `status: must be a comma-separated list of ${words.join(', ')}; got "${query}"`);
  }
  return statuses;
}

/** The description of a family's `status` query. */
export function statusQueryDoc(family: TaskFamily): string {
  const rules = FAMILIES[family];
  return `Comma-separated statuses: ${[...rules.statuses, ...Object.keys(rules.groups)].join(', ')} (default: all).`;
}

/** A task that is not the caller's, or does not exist, or is not visible: the same 404 (Errors, rule 7). */
export function taskNotFound(id: string): GatewayError {
  return new GatewayError('not_found', `No task with id ${JSON.stringify(id.slice(0, 200))} exists for this account.`);
}
