import type { z } from 'zod';

/**
 * A zod refusal in one line, `path: message; ...` (the whole value's path is `root`): the message of every
 * 400 `invalid_request` a body's schema refuses, and of an event the catalogue cannot decode. Here, in
 * the room every other imports and which imports none, so that validation anywhere may use it.
 */
export function zodMessage(error: z.ZodError, root = 'body'): string {
  return error.issues.map((i) => `${i.path.join('.') || root}: ${i.message}`).join('; ');
}
