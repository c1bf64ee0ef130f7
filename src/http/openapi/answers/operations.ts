import { z } from 'zod';

/** The operational endpoints' JSON answers: liveness, readiness (src/lifecycle/readiness.ts) and this description. */

export const Health = z.object({ status: z.literal('ok') }).meta({ description: 'The process answers.' });

export const Readiness = z
  .object({
    status: z.enum(['ready', 'not_ready', 'shutting_down']),
    failing: z.array(z.string()).describe('The failing parts (`shutdown` while the gateway drains); empty when ready.'),
    checks: z.record(z.string(), z.looseObject({ status: z.enum(['ok', 'failing']), error: z.string().optional() })),
  })
  .meta({ description: 'Each part the gateway needs (event store, database, Redis, projections, warm start) and whether it serves.' });

export const OpenApiDocument = z
  .looseObject({ openapi: z.string(), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()), components: z.looseObject({}) })
  .meta({ description: 'An OpenAPI 3.1 document.' });
