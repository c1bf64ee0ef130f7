import fc from 'fast-check';

/**
 * fast-check arbitraries read from a JSON Schema (the 2020-12 subset zod's toJSONSchema writes): values
 * the schema accepts, and values it refuses by one clear violation (a missing required property, a
 * wrong type, an unexpected property, a length, a bound, a pattern, an enum). Texts are printable
 * ASCII: the gateway refuses NUL in admin bodies, and counts lengths in UTF-16 units where JSON Schema
 * counts code points (docs/operations.md, "OpenAPI description").
 */

export type Schema = boolean | { readonly [keyword: string]: unknown };
type Node = { readonly [keyword: string]: unknown };

export interface SchemaArbitraries {
  valid(schema: Schema): fc.Arbitrary<unknown>;
  /** Null when the schema accepts every JSON value. */
  invalid(schema: Schema): fc.Arbitrary<unknown> | null;
  /** Texts the schema refuses (what a query parameter can carry); null when it takes every text. */
  invalidText(schema: Schema): fc.Arbitrary<string> | null;
}

const LONGEST = 40;
const SAFE_KEY = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/);
const text = (min = 0, max = LONGEST) => fc.string({ unit: 'grapheme-ascii', minLength: min, maxLength: Math.max(min, max) });
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  text(),
  fc.array(fc.oneof(fc.integer(), text()), { maxLength: 3 }),
  fc.dictionary(SAFE_KEY, fc.oneof(fc.integer(), text()), { maxKeys: 3 }),
);

/** A code point count, as JSON Schema's lengths count. */
const length = (s: string) => [...s].length;

type JsonType = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';
const SAMPLES: Record<JsonType, unknown> = { null: null, boolean: true, integer: 7, number: 0.5, string: 'text', array: [], object: {} };

export function schemaArbitraries(resolve: (ref: string) => Schema): SchemaArbitraries {
  const deref = (schema: Schema): Schema => {
    if (typeof schema !== 'boolean' && typeof schema.$ref === 'string') return deref(resolve(schema.$ref));
    return schema;
  };

  /** The JSON types a schema can accept (every type when it does not say). */
  function types(schema: Schema): Set<JsonType> {
    const s = deref(schema);
    const all = new Set<JsonType>(Object.keys(SAMPLES) as JsonType[]);
    if (s === true) return all;
    if (s === false) return new Set();
    if ('const' in s) return new Set([typeOf(s.const)]);
    if (Array.isArray(s.enum)) return new Set(s.enum.map(typeOf));
    const branches = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (branches) return new Set(branches.flatMap((b) => [...types(b)]));
    if (s.type === undefined) return all;
    const listed = [s.type].flat() as JsonType[];
    // An integer is a number too; a number schema takes integers.
    return new Set(listed.flatMap((t) => (t === 'number' ? ['number', 'integer'] : [t])) as JsonType[]);
  }

  function valid(schema: Schema): fc.Arbitrary<unknown> {
    const s = deref(schema);
    if (s === true) return anyJson;
    if (s === false) throw new Error('no value satisfies false');
    if ('const' in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
    const branches = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (branches) return fc.oneof(...branches.map(valid));
    if (s.allOf || s.not || s.if) throw new Error(`unsupported keyword in ${JSON.stringify(s)}`);
    if (Array.isArray(s.type)) return fc.oneof(...s.type.map((t) => valid({ ...s, type: t })));
    switch (s.type) {
      case undefined:
        return anyJson;
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
      case 'number':
        return number(s);
      case 'string':
        return string(s);
      case 'array': {
        const min = (s.minItems as number | undefined) ?? 0;
        const max = Math.min((s.maxItems as number | undefined) ?? min + 3, min + 3);
        return fc.array(s.items === undefined ? anyJson : valid(s.items as Schema), { minLength: min, maxLength: max });
      }
      case 'object':
        return object(s);
      default:
        throw new Error(`unsupported type ${String(s.type)}`);
    }
  }

  function number(s: Node): fc.Arbitrary<number> {
    const integer = s.type === 'integer';
    let min = (s.minimum as number | undefined) ?? -1e6;
    let max = (s.maximum as number | undefined) ?? 1e6;
    if (typeof s.exclusiveMinimum === 'number') min = integer ? s.exclusiveMinimum + 1 : s.exclusiveMinimum + 1e-6;
    if (typeof s.exclusiveMaximum === 'number') max = integer ? s.exclusiveMaximum - 1 : s.exclusiveMaximum - 1e-6;
    if (!integer) return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
    const inner = fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) });
    // The bounds themselves (a safe integer's end included) as well as values between them.
    return fc.oneof(inner, fc.constantFrom(min, max));
  }

  function string(s: Node): fc.Arbitrary<string> {
    const min = (s.minLength as number | undefined) ?? 0;
    const max = Math.min((s.maxLength as number | undefined) ?? Infinity, min + LONGEST);
    const base = typeof s.pattern === 'string' ? fc.stringMatching(new RegExp(s.pattern as string, 'u')).map(printable) : text(min, max);
    return base.filter((v) => length(v) >= min && length(v) <= ((s.maxLength as number | undefined) ?? Infinity) && matches(s, v));
  }

  function object(s: Node): fc.Arbitrary<Record<string, unknown>> {
    const properties = (s.properties ?? {}) as Record<string, Schema>;
    const required = (s.required ?? []) as string[];
    const known = fc.record(Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, valid(v)])), { requiredKeys: required });
    const extra = s.additionalProperties;
    if (extra === false || extra === undefined) return known;
    // A loose object: a few properties it does not name, of any value its additionalProperties allows.
    const others = fc.dictionary(SAFE_KEY.map((k) => `x_${k}`), valid(extra as Schema), { maxKeys: 2 });
    return fc.tuple(known, others).map(([k, o]) => ({ ...o, ...k }));
  }

  /** A value of a type the schema does not accept. */
  function wrongType(schema: Schema): fc.Arbitrary<unknown> | null {
    const accepted = types(schema);
    const others = (Object.keys(SAMPLES) as JsonType[]).filter((t) => !accepted.has(t) && !(t === 'integer' && accepted.has('number')));
    return others.length === 0 ? null : fc.constantFrom(...others.map((t) => SAMPLES[t]));
  }

  function invalid(schema: Schema): fc.Arbitrary<unknown> | null {
    const s = deref(schema);
    if (s === true) return null;
    const choices: fc.Arbitrary<unknown>[] = [];
    const typeViolation = wrongType(s);
    if (typeViolation) choices.push(typeViolation);
    if (s !== false && !('const' in s) && !s.enum && !s.anyOf && !s.oneOf) {
      if (s.type === 'string') choices.push(...stringViolations(s));
      if (s.type === 'integer' || s.type === 'number') choices.push(...numberViolations(s));
      if (s.type === 'array') choices.push(...arrayViolations(s));
      if (s.type === 'object') choices.push(...objectViolations(s));
    }
    if (s !== false && Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) choices.push(fc.constant('not-one-of-them'));
    return choices.length === 0 ? null : fc.oneof(...choices);
  }

  function stringViolations(s: Node): fc.Arbitrary<unknown>[] {
    const out: fc.Arbitrary<unknown>[] = [];
    const maxLength = s.maxLength as number | undefined;
    if (maxLength !== undefined && maxLength <= 10_000) out.push(fc.constant('7'.repeat(maxLength + 1)));
    const minLength = s.minLength as number | undefined;
    if (minLength !== undefined && minLength > 0) out.push(fc.constant(''));
    if (typeof s.pattern === 'string') {
      const misses = ['', ' ', '~', 'a b', '-1', 'x:y'].filter((c) => !new RegExp(s.pattern as string, 'u').test(c));
      if (misses.length > 0) out.push(fc.constantFrom(...misses));
    }
    return out;
  }

  function numberViolations(s: Node): fc.Arbitrary<unknown>[] {
    const out: fc.Arbitrary<unknown>[] = [];
    if (typeof s.minimum === 'number' && s.minimum - 1 >= -Number.MAX_SAFE_INTEGER) out.push(fc.constant(s.minimum - 1));
    if (typeof s.exclusiveMinimum === 'number') out.push(fc.constant(s.exclusiveMinimum));
    if (typeof s.maximum === 'number') out.push(fc.constant(s.maximum < Number.MAX_SAFE_INTEGER ? s.maximum + 1 : 2 ** 53));
    if (s.type === 'integer') out.push(fc.constant(0.5));
    return out;
  }

  function arrayViolations(s: Node): fc.Arbitrary<unknown>[] {
    const out: fc.Arbitrary<unknown>[] = [];
    const item = s.items as Schema | undefined;
    const minItems = (s.minItems as number | undefined) ?? 0;
    if (minItems > 0) out.push(fc.constant([]));
    if (item !== undefined) {
      const wrong = invalid(item);
      if (wrong) out.push(fc.tuple(fc.array(valid(item), { minLength: minItems, maxLength: minItems + 1 }), wrong).map(([items, bad]) => [...items, bad]));
      const maxItems = s.maxItems as number | undefined;
      if (maxItems !== undefined && maxItems <= 1000) out.push(valid(item).map((v) => Array.from({ length: maxItems + 1 }, () => v)));
    }
    return out;
  }

  function objectViolations(s: Node): fc.Arbitrary<unknown>[] {
    const out: fc.Arbitrary<unknown>[] = [];
    const whole = object(s);
    const properties = (s.properties ?? {}) as Record<string, Schema>;
    for (const key of (s.required ?? []) as string[]) out.push(whole.map(({ [key]: _dropped, ...rest }) => rest));
    for (const [key, property] of Object.entries(properties)) {
      const wrong = invalid(property);
      if (wrong) out.push(fc.tuple(whole, wrong).map(([value, bad]) => ({ ...value, [key]: bad })));
    }
    if (s.additionalProperties === false) out.push(whole.map((value) => ({ ...value, unexpected_field: 1 })));
    return out;
  }

  function invalidText(schema: Schema): fc.Arbitrary<string> | null {
    const s = deref(schema);
    if (typeof s === 'boolean') return null;
    if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) return fc.constant('not-one-of-them');
    if (s.type !== 'string') return null;
    const choices = stringViolations(s) as fc.Arbitrary<string>[];
    return choices.length === 0 ? null : fc.oneof(...choices);
  }

  return { valid, invalid, invalidText };
}

function typeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (Number.isInteger(value)) return 'integer';
  return typeof value as JsonType;
}

/** Generated pattern text stays printable ASCII: anything else (NUL among them) becomes `x`. */
const printable = (s: string) => s.replace(/[^\x20-\x7e]/gu, 'x');

function matches(s: Node, value: string): boolean {
  return typeof s.pattern !== 'string' || new RegExp(s.pattern, 'u').test(value);
}
