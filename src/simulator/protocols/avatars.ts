/**
 * The avatar family of the content-generation tasks API: `{model, source_url, …}` → a task whose
 * content is `{}`; its id is what later digital-human calls name as the avatar.
 */
import type { Rejection, TaskResult } from './tasks';

export function avatarSubmission(b: Record<string, unknown>): TaskResult | Rejection {
  if (typeof b.source_url !== 'string' || b.source_url === '') {
    return { status: 400, message: 'The parameter `source_url` specified in the request is not valid.' };
  }
  return { content: {} };
}
