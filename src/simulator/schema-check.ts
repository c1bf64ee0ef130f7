/**
 * The check OpenAI and Anthropic make of the JSON Schemas in a request (function parameters,
 * structured-output formats) before any generation: a `type` that is no JSON Schema type is refused
 * with a 400. Real vendors check much more; the type names are what a translation can get wrong
 * (Gemini's OpenAPI schemas spell them `OBJECT`, `STRING`, …).
 */
import { asArray, asRecord } from './conversation';

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/** Keywords whose value is one schema, a list of schemas, or a map of named schemas. */
const ONE = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties'];
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];

/** The first invalid `type` value in a schema, as the vendor words it, or null when there is none. */
export function schemaTypeProblem(schema: unknown, depth = 0): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema) || depth > 100) return null;
  const s = schema as Record<string, unknown>;
  if (s.type !== undefined) {
    for (const t of Array.isArray(s.type) ? s.type : [s.type]) {
      if (typeof t !== 'string' || !JSON_TYPES.has(t)) return `${JSON.stringify(t)} is not valid under any of the given schemas`;
    }
  }
  const children = [
    ...ONE.map((k) => s[k]).flatMap((v) => (Array.isArray(v) ? v : [v])),
    ...LIST.flatMap((k) => asArray(s[k])),
    ...MAP.flatMap((k) => Object.values(asRecord(s[k]))),
  ];
  for (const child of children) {
    const problem = schemaTypeProblem(child, depth + 1);
    if (problem) return problem;
  }
  return null;
}
