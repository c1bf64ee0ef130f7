import type { AgentSettings } from '../../events/catalog';

/** A knowledge page chosen for injection. */
export interface InjectedPage {
  readonly kbId: string;
  readonly id: string;
  readonly title: string;
  readonly body: string;
}

/** What the rewrite needs to know, read at the edge (src/http/agents/agent-call.ts). */
export interface RewriteFacts {
  readonly agent: AgentSettings;
  /** The model the call goes to (canonical id), already resolved through the fallbacks. */
  readonly model: string;
  readonly vision: boolean;
  /** The agent's built-in tools that the model's channels support (`web_search`, `image_generation`). */
  readonly builtinTools: readonly string[];
  readonly pages: readonly InjectedPage[];
}

export type Rewritten = { readonly body: Record<string, unknown> } | { readonly error: { readonly code: 'invalid_request' | 'model_no_vision'; readonly message: string } };

/** Pages injected per call, and their size bounds (docs/agents.md, "Knowledge injection"). */
export const INJECTED_PAGES = 3;
export const INJECTED_PAGE_CHARS = 2000;
export const INJECTED_TOTAL_CHARS = 6000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of the latest user message (its text parts joined), for the knowledge search. */
export function latestUserText(body: unknown): string {
  if (!isObject(body) || !Array.isArray(body.messages)) return '';
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const m = body.messages[i];
    if (!isObject(m) || m.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (Array.isArray(m.content))
      return m.content
        .filter((p): p is Record<string, unknown> => isObject(p) && p.type === 'text' && typeof p.text === 'string')
        .map((p) => p.text as string)
        .join('\n');
    return '';
  }
  return '';
}

const hasImage = (messages: readonly unknown[]) =>
  messages.some((m) => isObject(m) && Array.isArray(m.content) && m.content.some((p) => isObject(p) && p.type === 'image_url'));

/** The context message the pages become: each page under its title, bodies cut to the bounds. */
export function knowledgeContext(pages: readonly InjectedPage[]): string | null {
  if (pages.length === 0) return null;
  let budget = INJECTED_TOTAL_CHARS;
  const parts: string[] = [];
  for (const page of pages.slice(0, INJECTED_PAGES)) {
    if (budget <= 0) break;
    const limit = Math.min(INJECTED_PAGE_CHARS, budget);
    const body = page.body.length > limit ? `${page.body.slice(0, limit)}…` : page.body;
    budget -= body.length;
    parts.push(`## ${page.title} (${page.kbId}/${page.id})\n${body}`);
  }
  return `Knowledge base pages relevant to the user's latest message:\n\n${parts.join('\n\n')}`;
}

/**
 * An agent call's body as the upstream gets it, in the order of the spec's Agent key usage rules:
 * the agent's model (the body's is ignored); the agent's system prompt first, then the injected
 * knowledge, then the client's messages; client `tools` / `functions` dropped and the agent's
 * built-in tools added; the agent's temperature when the client set none. Refused: images to a model
 * without vision (`model_no_vision`), `conversation_id` in the body, a body without messages.
 */
export function rewriteAgentBody(body: unknown, facts: RewriteFacts): Rewritten {
  if (!isObject(body)) return { error: { code: 'invalid_request', message: 'the body must be a JSON object' } };
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return { error: { code: 'invalid_request', message: 'messages: an agent call needs a non-empty array of messages' } };
  if ('conversation_id' in body)
    return {
      error: {
        code: 'invalid_request',
        message: 'conversation_id in the body is not supported: there is no server-side conversation store; send the full history in messages (the session_id header pins a conversation to one channel)',
      },
    };
  if (!facts.vision && hasImage(body.messages))
    return { error: { code: 'model_no_vision', message: `the agent's model ${facts.model} does not accept images (image_url parts)` } };

  const { tools: _tools, functions: _functions, tool_choice: _toolChoice, function_call: _functionCall, parallel_tool_calls: _parallel, ...rest } = body;
  const messages: unknown[] = [];
  if (facts.agent.system_prompt !== '') messages.push({ role: 'system', content: facts.agent.system_prompt });
  const context = knowledgeContext(facts.pages);
  if (context !== null) messages.push({ role: 'system', content: context });
  messages.push(...body.messages);
  const rewritten: Record<string, unknown> = { ...rest, model: facts.model, messages };
  // Built-in tools travel on streamed calls only (this endpoint refuses them otherwise).
  if (facts.builtinTools.length > 0 && body.stream === true) rewritten.tools = facts.builtinTools.map((type) => ({ type }));
  if ((body.temperature === undefined || body.temperature === null) && facts.agent.temperature !== null) rewritten.temperature = facts.agent.temperature;
  return { body: rewritten };
}
