import { z } from 'zod';

/**
 * Text an operator types (a name, a title, a reference, a tag): surrounding white space is dropped,
 * and what is left must not be blank. The `\S` pattern says "not blank" in the JSON Schema of
 * /openapi.json too, where `.min(1)` after the trim would show as a length any blank text meets.
 */
export const operatorText = (max: number) => z.string().trim().max(max).regex(/\S/, 'must not be blank');
