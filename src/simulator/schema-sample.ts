/**
 * Values that satisfy a JSON Schema, for tool-call arguments and structured output: an app developing
 * against the demo gets answers its own validation (zod, ajv, the SDKs' `parse`) accepts. The values come
 * from json-schema-faker, seeded from the request's text, so the same request always gets the same answer.
 */
import { generateSync, type JsonSchema } from 'json-schema-faker';

const COUNTS = new Set(['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties']);

/** Gemini's OpenAPI subset spells types in capitals and marks nulls with `nullable`: JSON Schema's spelling. */
export function fromOpenApiSchema(schema: unknown, depth = 0): unknown {
  if (Array.isArray(schema)) return schema.map((s) => fromOpenApiSchema(s, depth + 1));
  if (typeof schema !== 'object' || schema === null || depth > 64) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'type' && typeof value === 'string') out.type = value.toLowerCase();
    else if (key === 'nullable' || key === 'propertyOrdering') continue;
    else if (key === 'properties' && value && typeof value === 'object') {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, fromOpenApiSchema(s, depth + 1)]));
    } else if (key === 'items' || key === 'anyOf') out[key] = fromOpenApiSchema(value, depth + 1);
    // int64 counts travel as strings in Gemini's JSON ("minItems": "1").
    else if (COUNTS.has(key) && typeof value === 'string' && /^\d+$/.test(value)) out[key] = Number(value);
    else out[key] = value;
  }
  // OpenAPI's `format: int32` and the like say nothing JSON Schema checks.
  if (out.type === 'integer' || out.type === 'number') delete out.format;
  const s = schema as Record<string, unknown>;
  if (s.nullable === true && typeof out.type === 'string') {
    out.type = [out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  }
  return out;
}

/** 32-bit FNV-1a: a stable seed from a text. */
function seedOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h || 1;
}

/**
 * A value valid against the schema, the same for the same schema and seed text; undefined when the
 * generator cannot make one (a schema it does not understand). Optional properties are filled too, so
 * the app sees every field it declared.
 */
export function sampleOf(schema: unknown, seedText: string): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
  try {
    return generateSync(schema as JsonSchema, { seed: seedOf(seedText), alwaysFakeOptionals: true, maxDefaultItems: 3 });
  } catch {
    return undefined;
  }
}
