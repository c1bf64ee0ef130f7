/** What every console route shares: the form size limit, the routes' OpenAPI entry, date fields. */
import { z } from 'zod';
import type { RouteDoc } from '../http/openapi/route-doc';

/** A form is a few short fields. */
export const FORM_BYTES = 16 * 1024;

export const doc = (operationId: string, summary: string, method: 'GET' | 'POST', extra: Partial<RouteDoc> = {}): RouteDoc => ({
  operationId,
  summary,
  tags: ['console'],
  responses: { 200: { description: 'An HTML page.', mediaTypes: ['text/html'] } },
  ...(method === 'POST' ? { body: { raw: 'A form (application/x-www-form-urlencoded) with the session\'s CSRF token in `_csrf`.' } } : {}),
  ...extra,
});

export const isDateText = (text: string) => /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`));

export const DateText = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'a date is written YYYY-MM-DD')
  .refine((text) => !Number.isNaN(Date.parse(`${text}T00:00:00Z`)), 'is not a date');
