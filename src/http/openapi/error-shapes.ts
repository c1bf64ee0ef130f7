import { z } from 'zod';
import type { ErrorShape } from '../../upstream/contract';
import { ERROR_CODES } from '../errors';

/**
 * The error bodies the gateway answers with, as schemas for the OpenAPI document: one per client
 * protocol (errors.ts' `errorBody` and `upstreamErrorBody`), the admin API's, and JSON-RPC's (MCP).
 * Built from the error table, so a new code or type is described as soon as it exists; the openapi
 * tests check real refusals against them.
 */

const infos = Object.values(ERROR_CODES);
const distinct = <T extends string>(values: readonly T[]) => [...new Set(values)] as [T, ...T[]];

/** `upstream_error`: the chat shape's code of an upstream failure passed through (errors.ts). */
const CHAT_CODES = distinct([...(Object.keys(ERROR_CODES) as (keyof typeof ERROR_CODES)[]), 'upstream_error'] as const);

export const ERROR_SCHEMAS = {
  ChatError: z
    .object({
      error: z.object({
        message: z.string(),
        type: z.enum(distinct(infos.map((i) => i.chat))),
        code: z.enum(CHAT_CODES),
      }),
    })
    .meta({ description: 'An error in the chat-completions shape (also the responses, images, wiki, usage and balance endpoints).' }),
  MessagesError: z
    .object({
      type: z.literal('error'),
      error: z.object({ type: z.enum(distinct(infos.map((i) => i.messages))), message: z.string() }),
    })
    .meta({ description: 'An error in the messages shape.' }),
  GenerateError: z
    .object({
      error: z.object({ code: z.number().int(), message: z.string(), status: z.enum(distinct(infos.map((i) => i.generate))) }),
    })
    .meta({ description: 'An error in the generate-content shape: `code` is the HTTP status.' }),
  AdminError: z
    .object({ error: z.object({ code: z.string(), message: z.string() }) })
    .meta({ description: "An error of the operator's API (and of /metrics): a code and a message." }),
  JsonRpcError: z
    .object({
      jsonrpc: z.literal('2.0'),
      error: z.object({ code: z.number().int(), message: z.string() }),
      id: z.union([z.string(), z.number(), z.null()]),
    })
    .meta({ description: 'A JSON-RPC error (MCP): -32700 a body that is not JSON, -32600 another invalid request, -32000 a refusal at the HTTP level.' }),
} as const;

export type ErrorSchemaName = keyof typeof ERROR_SCHEMAS;

export const SHAPE_SCHEMA: Readonly<Record<ErrorShape, ErrorSchemaName>> = { chat: 'ChatError', messages: 'MessagesError', generate: 'GenerateError' };
