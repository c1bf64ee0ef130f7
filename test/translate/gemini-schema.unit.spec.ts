/** Gemini's OpenAPI-subset schemas as JSON Schema: the cases the property test reaches only by chance. */
import { Type } from '@google/genai';
import { describe, expect, it } from 'vitest';
import { jsonSchemaFromGemini } from '../../src/upstream/translate/gemini-schema';

describe('jsonSchemaFromGemini', () => {
  it('lets null through a nullable anyOf, enum or typeless schema', () => {
    expect(jsonSchemaFromGemini({ anyOf: [{ type: Type.STRING }, { type: Type.INTEGER }], nullable: true })).toEqual({
      anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }],
    });
    expect(jsonSchemaFromGemini({ type: Type.STRING, format: 'enum', enum: ['a'], nullable: true })).toEqual({ type: ['string', 'null'], enum: ['a', null] });
    expect(jsonSchemaFromGemini({ type: Type.TYPE_UNSPECIFIED, nullable: true, description: 'anything' })).toEqual({ description: 'anything' });
    expect(jsonSchemaFromGemini({ type: Type.NULL, nullable: true })).toEqual({ type: 'null' });
  });

  it('keeps JSON Schema as it is', () => {
    const schema = { type: 'object', properties: { a: { type: ['string', 'null'], format: 'date-time' }, b: { $ref: '#/$defs/b' } }, $defs: { b: { type: 'integer' } }, additionalProperties: false };
    expect(jsonSchemaFromGemini(schema)).toEqual(schema);
  });

  it('orders properties by propertyOrdering, the rest after them as written', () => {
    const out = jsonSchemaFromGemini({ type: Type.OBJECT, properties: { c: {}, a: {}, b: {} }, propertyOrdering: ['b', 'a', 'missing'] }) as { properties: object };
    expect(Object.keys(out.properties)).toEqual(['b', 'a', 'c']);
  });

  it('does not walk a schema nested past any real one (no stack exhaustion)', () => {
    let deep: Record<string, unknown> = { type: Type.STRING };
    for (let i = 0; i < 20_000; i++) deep = { type: Type.ARRAY, items: deep };
    const out = jsonSchemaFromGemini(deep) as { type: string; items: unknown };
    expect(out.type).toBe('array');
  });
});
