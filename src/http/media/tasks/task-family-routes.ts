import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { FAMILIES } from '../../../commands/task/families';
import { Instant } from '../../../config/schema';
import type { TaskFamily } from '../../../events/catalog';
import type { TaskQueries, TaskRow } from '../../../projections/tasks/queries';
import { GatewayError } from '../../errors';
import { countQuery } from '../../intake/numbers';
import type { RouteDoc } from '../../openapi/route-doc';
import { MEDIA_READ, statusesOf, statusQueryDoc, TaskIdParam, taskNotFound } from './task-views';

/** A route's documentation without what the factory fills in (the `id` parameter, the list's query). */
type DocOf = Omit<RouteDoc, 'params' | 'query'>;

/** The query parameters a family's list may take (the spec's list pages; only images page by cursor and time). */
export type ListParam = 'limit' | 'status' | 'from' | 'to' | 'cursor';

/**
 * What `taskFamilyRoutes` needs to know of a family: where its tasks live, how a task's stored view
 * becomes the family's answer, which statuses its list shows and which list parameters it takes.
 */
export interface TaskFamilyView {
  /** The family; its `routes.base` (`src/commands/task/families.ts`) is where these routes are. */
  readonly family: TaskFamily;
  /** The stored view of a task as the family's answer object (a poll's body, a list's item). */
  readonly body: (row: TaskRow) => Record<string, unknown>;
  /** `GET {base}/{id}`, for a family whose declaration has `routes.poll` (voices are listed only). */
  readonly get?: {
    readonly doc: DocOf;
    /** The `id` parameter's description (default: the task id the submission answered with). */
    readonly idParam?: z.ZodType;
    /** Ids that cannot name a task of this family answer the 404 without a read. */
    readonly ids?: RegExp;
    /** The 404 of an id that names none of the caller's tasks (default: `taskNotFound`). */
    readonly notFound?: (id: string) => GatewayError;
    /** An answer other than `body` with status 200 (an image task: 202 in flight, then its final answer). */
    readonly answer?: (row: TaskRow, reply: FastifyReply) => Promise<unknown>;
  };
  readonly list: {
    readonly doc: DocOf;
    /** Its query parameters, in the order the document lists them; no `status`: every status of the family. */
    readonly params: readonly ListParam[];
    /** The page: `default` tasks, at most `max`; `strict`: a limit outside 1-max is a 400 (else above max is max). */
    readonly limit: { readonly default: number; readonly max: number; readonly strict?: boolean; readonly describe?: string };
    /** The array's name in the answer (default `data`). */
    readonly key?: string;
    /** The list's item, when it is not `body`. */
    readonly item?: (row: TaskRow) => Record<string, unknown>;
    /** Fields the answer carries after the items (voices: the presets). */
    readonly more?: () => Record<string, unknown>;
  };
}

interface ListQuery {
  readonly limit?: number | undefined;
  readonly status?: string | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  readonly cursor?: string | undefined;
}

/** The list's query schema: the parameters the family takes, each described as the spec's list pages are. */
function listQuery(view: TaskFamilyView): NonNullable<RouteDoc['query']> {
  const { limit } = view.list;
  const rule = `must be a whole number from 1 to ${limit.max}`;
  const schemas: Record<ListParam, () => z.ZodType> = {
    limit: () =>
      limit.strict
        ? z
            .string()
            .regex(/^\d{1,4}$/, rule)
            .transform(Number)
            .refine((n) => n >= 1 && n <= limit.max, rule)
            .optional()
            .describe(limit.describe ?? `Tasks per page, 1-${limit.max} (default ${limit.default}); outside that range a 400.`)
        : countQuery(1, limit.max).describe(limit.describe ?? `Tasks per page (default ${limit.default}; above ${limit.max} is ${limit.max}).`),
    status: () => z.string().max(200).optional().describe(statusQueryDoc(view.family)),
    from: () => Instant.optional().describe('Tasks submitted at or after this time: Unix seconds, RFC 3339 (with its offset) or YYYY-MM-DD (that day, from 00:00 UTC).'),
    to: () => Instant.optional().describe('Tasks submitted before this time (excluded): Unix seconds, RFC 3339 or YYYY-MM-DD (that day is excluded).'),
    cursor: () => z.string().min(1).max(200).optional().describe('`next_cursor` of the previous page, as it is (the same filters with it).'),
  };
  return z.looseObject(Object.fromEntries(view.list.params.map((p) => [p, schemas[p]()])));
}

/** The list's documentation with its query, in the order `RouteDoc`s are written. */
function withQuery(doc: DocOf, query: RouteDoc['query']): RouteDoc {
  const { responses, errors, ...head } = doc;
  return { ...head, ...(query ? { query } : {}), responses, ...(errors ? { errors } : {}) };
}

/** The poll's documentation with its `id` parameter. */
function withId(doc: DocOf, id: z.ZodType): RouteDoc {
  const { responses, errors, ...head } = doc;
  return { ...head, params: { id }, responses, ...(errors ? { errors } : {}) };
}

/**
 * `GET {base}/{id}` and `GET {base}` of a task family, with their OpenAPI docs: free reads (`MEDIA_READ`:
 * `x-gateway-trace` on every answer, at any balance), the caller's own visible tasks only (anything else
 * is the same 404, Errors rule 7), newest first.
 */
export function taskFamilyRoutes(view: TaskFamilyView, queries: TaskQueries) {
  const routes = FAMILIES[view.family].routes;
  if (routes === null || routes.poll !== (view.get !== undefined)) throw new Error(`the ${view.family} family declares no such routes`);
  const base = routes.base;
  const query = view.list.params.length > 0 ? listQuery(view) : undefined;
  const cursors = view.list.params.includes('cursor');
  return (app: FastifyInstance): void => {
    const get = view.get;
    if (get) {
      const notFound = get.notFound ?? taskNotFound;
      const doc = withId(get.doc, get.idParam ?? TaskIdParam);
      app.get<{ Params: { id: string } }>(`${base}/:id`, { config: { ...MEDIA_READ, openapi: doc } }, async (request, reply) => {
        const { id } = request.params;
        const row = get.ids === undefined || get.ids.test(id) ? await queries.get(request.caller!.accountId, view.family, id) : null;
        if (!row) throw notFound(id);
        return get.answer ? get.answer(row, reply) : view.body(row);
      });
    }
    const { list } = view;
    app.get<{ Querystring: ListQuery }>(base, { config: { ...MEDIA_READ, openapi: withQuery(list.doc, query) } }, async (request) => {
      const q: ListQuery = request.query ?? {};
      const statuses = statusesOf(view.family, q.status);
      const { rows, more } = await queries.list({
        accountId: request.caller!.accountId,
        family: view.family,
        statuses,
        limit: q.limit ?? list.limit.default,
        ...(cursors ? { from: q.from, to: q.to, cursor: q.cursor === undefined ? undefined : decodeCursor(q.cursor) } : {}),
      });
      const items = rows.map(list.item ?? view.body);
      return {
        [list.key ?? 'data']: items,
        ...(cursors ? { next_cursor: more ? encodeCursor(rows.at(-1)!) : null } : {}),
        ...(list.more ? list.more() : {}),
      };
    });
  };
}

/** The page's last task: where the next page starts. Opaque to clients (base64url JSON). */
export function encodeCursor(row: Pick<TaskRow, 'created_at' | 'task_id'>): string {
  return Buffer.from(JSON.stringify([row.created_at, row.task_id])).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: number; taskId: string } {
  try {
    const [createdAt, taskId] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (Number.isSafeInteger(createdAt) && typeof taskId === 'string' && taskId.length > 0) return { createdAt: createdAt as number, taskId };
  } catch {
    // Not ours: the same 400 as any other cursor this list never gave.
  }
  throw new GatewayError('invalid_request', 'cursor: not a cursor this list gave (pass next_cursor of the previous page as it is)');
}
