/**
 * Gemini's `Schema` (an OpenAPI 3.0 subset: ai.google.dev/api/caching#Schema) as JSON Schema, the
 * form the canonical model and the other three vendors use. Gemini clients write it in function
 * declarations' `parameters` and in `generationConfig.responseSchema`; the SDK's `Type` enum spells
 * the types in upper case (`OBJECT`, `STRING`, …), which no JSON Schema validator accepts.
 *
 * The other direction needs no conversion: Gemini takes JSON Schema as it is in
 * `parametersJsonSchema` and `responseJsonSchema`, which is what the generate-content encoder sends.
 */
import { isRecord, type Json } from './shared';

const TYPES: Readonly<Record<string, string>> = {
  STRING: 'string',
  NUMBER: 'number',
  INTEGER: 'integer',
  BOOLEAN: 'boolean',
  ARRAY: 'array',
  OBJECT: 'object',
  NULL: 'null',
};

/** OpenAPI formats that say how a number is stored, or that a string is an enum: no JSON Schema
 * meaning (and OpenAI's strict mode refuses unknown formats). String formats such as `date-time`
 * are JSON Schema's own and stay. */
const OPENAPI_ONLY_FORMATS = new Set(['enum', 'int32', 'int64', 'float', 'double']);

/** int64 fields: Google's JSON mapping writes them as decimal strings (the SDK's types say `string`). */
const COUNTS = new Set(['minItems', 'maxItems', 'minLength', 'maxLength', 'minProperties', 'maxProperties']);

/** Deeper than any schema a person writes; past it the rest is passed on unchanged rather than
 * walked (a crafted body must not exhaust the stack). */
const MAX_DEPTH = 64;

function jsonType(type: unknown): unknown {
  if (typeof type !== 'string') return Array.isArray(type) ? type.map(jsonType) : type;
  return TYPES[type.toUpperCase()] ?? (type.toUpperCase() === 'TYPE_UNSPECIFIED' ? undefined : type);
}

const count = (value: unknown): unknown => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value);

/**
 * A Gemini schema as JSON Schema: lower-case types (`TYPE_UNSPECIFIED` means no type), `nullable`
 * as a type union with `null` (or a `{type: null}` branch of `anyOf`; `null` joins an `enum`),
 * int64 counts as numbers, `propertyOrdering` as the order of `properties` (then dropped),
 * `example` as `examples`, storage formats dropped; `items`, `properties` and `anyOf` converted
 * likewise. Anything else is kept as written. A JSON Schema goes through unchanged, since it uses
 * none of these spellings.
 */
export function jsonSchemaFromGemini(schema: unknown, depth = 0): unknown {
  if (!isRecord(schema) || depth > MAX_DEPTH) return schema;
  const out: Json = {};
  const ordering = Array.isArray(schema.propertyOrdering) ? schema.propertyOrdering.filter((k): k is string => typeof k === 'string') : [];
  for (const [key, value] of Object.entries(schema)) {
    if (value === undefined || value === null) continue;
    switch (key) {
      case 'type': {
        const type = jsonType(value);
        if (type !== undefined) out.type = type;
        break;
      }
      case 'nullable':
      case 'propertyOrdering':
        break;
      case 'format':
        if (typeof value !== 'string' || !OPENAPI_ONLY_FORMATS.has(value)) out.format = value;
        break;
      case 'items':
        out.items = Array.isArray(value) ? value.map((s) => jsonSchemaFromGemini(s, depth + 1)) : jsonSchemaFromGemini(value, depth + 1);
        break;
      case 'anyOf':
        out.anyOf = Array.isArray(value) ? value.map((s) => jsonSchemaFromGemini(s, depth + 1)) : value;
        break;
      case 'properties': {
        if (!isRecord(value)) {
          out.properties = value;
          break;
        }
        // JSON objects keep their key order: `propertyOrdering` survives as the order of `properties`.
        const keys = [...ordering.filter((k) => k in value), ...Object.keys(value).filter((k) => !ordering.includes(k))];
        out.properties = Object.fromEntries(keys.map((k) => [k, jsonSchemaFromGemini(value[k], depth + 1)]));
        break;
      }
      case 'example':
        if (!('examples' in schema)) out.examples = [value];
        break;
      default:
        out[key] = COUNTS.has(key) ? count(value) : value;
    }
  }
  if (schema.nullable === true) makeNullable(out);
  return out;
}

/** Lets `null` through a converted schema. */
function makeNullable(out: Json): void {
  if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  if (typeof out.type === 'string') {
    if (out.type !== 'null') out.type = [out.type, 'null'];
  } else if (Array.isArray(out.type)) {
    if (!out.type.includes('null')) out.type = [...out.type, 'null'];
  } else if (Array.isArray(out.anyOf)) {
    out.anyOf = [...out.anyOf, { type: 'null' }];
  }
  // No type and no anyOf: the schema already allows null.
}
