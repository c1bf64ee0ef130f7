import type { z } from 'zod';
import type { ErrorSchemaName } from './error-shapes';

/** The document's groups of operations (OpenAPI tags), in the order they are listed. */
export const TAGS = {
  chat: 'The chat protocols: chat completions, messages, responses and generate-content, each in its own shape.',
  media: 'Billable media endpoints (images, video, music, speech, voice clones, transcripts), their task polls and lists (free), and the signed links of the media outputs the gateway hosts.',
  account: "The calling key's balance, billing views and usage totals (free).",
  models: 'The model catalogue.',
  knowledge: 'Read-only knowledge retrieval (REST) and the MCP server.',
  'admin-accounts': "The operator's API: accounts, top-ups, limits, ledger and call log.",
  'admin-keys': "The operator's API: API keys.",
  'admin-knowledge': "The operator's API: knowledge bases, pages and source files.",
  'admin-billing': "The operator's API: re-rating past calls.",
  console: "The account holders' web console: HTML pages under /console/ (a session cookie from a sign-in link; a CSRF token in every form).",
  'admin-enterprise': "The operator's API: enterprises, members, agents, agent keys, key requests and the audit trail.",
  'admin-channels': "The operator's API: upstream channels' health, enabling and disabling them, probes; configuration reloads.",
  operations: 'Liveness, readiness, metrics and this description.',
} as const;

export type Tag = keyof typeof TAGS;

/** One answer of an operation. */
export interface ResponseDoc {
  readonly description: string;
  /** The JSON body's schema; when absent, the operation's named answer (answers/ `OPERATION_ANSWERS`), else
   * a JSON object without further description. */
  readonly schema?: z.ZodType;
  /** Media types of the body (default `application/json`); empty: no body. */
  readonly mediaTypes?: readonly string[];
}

/** A request body: the very zod schemas the route validates it with. */
export interface BodyDoc {
  /** `application/json`. */
  readonly json?: z.ZodType;
  /** `multipart/form-data`: the same fields as text parts, plus the named file parts. */
  readonly multipart?: { readonly fields: z.ZodType; readonly files: Readonly<Record<string, string>> };
  /** Any media type, taken as raw bytes (an uploaded file): what it is. */
  readonly raw?: string;
  /** Whether a body must be sent (default true). */
  readonly required?: boolean;
}

/**
 * What a route tells the OpenAPI document about itself, in its `config.openapi`. Request schemas are
 * the zod objects the route validates with; a `query` is enforced by the openapi plugin itself (the
 * handler reads its parsed output). Security, the error shape and the automatic error answers come from
 * the route's own settings (`auth`, `free`, `headerKeyOnly`, `shape`, `rateLimited`, `idempotent`).
 */
export interface RouteDoc {
  /** Unique; what a generated client names the method. */
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly Tag[];
  /** The path as described, for a route whose URL has a wildcard (`/v1beta/models/*` is
   * `/v1beta/models/{model}:generateContent` and `:streamGenerateContent`). */
  readonly path?: string;
  /** Path parameters' schemas and descriptions; a parameter not named here is a plain string. */
  readonly params?: Readonly<Record<string, z.ZodType>>;
  readonly query?: z.ZodObject;
  /** Request headers the operation reads (beyond authentication and `Idempotency-Key`). */
  readonly headers?: Readonly<Record<string, z.ZodType>>;
  readonly body?: BodyDoc;
  /** The answers of a request that succeeded, by status. */
  readonly responses: Readonly<Record<number, ResponseDoc>>;
  /** Refusals this operation gives beyond the automatic ones (400 of a body or query, 401, 402,
   * 413, 429): status and when. */
  readonly errors?: Readonly<Record<number, string>>;
  /** The error body's schema when it is not the one the route's URL and `shape` imply (`/metrics`). */
  readonly errorSchema?: ErrorSchemaName;
  /** Security requirements other than the route's `auth` setting (`/metrics`' optional token). */
  readonly security?: readonly Readonly<Record<string, readonly string[]>>[];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's description in `/openapi.json`; a wildcard route may give several (one per path). */
    readonly openapi?: RouteDoc | readonly RouteDoc[];
  }
}

export const docsOf = (value: RouteDoc | readonly RouteDoc[] | undefined): readonly RouteDoc[] =>
  value === undefined ? [] : Array.isArray(value) ? (value as readonly RouteDoc[]) : [value as RouteDoc];
