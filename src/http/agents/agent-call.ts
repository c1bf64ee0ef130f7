import type { FastifyRequest } from 'fastify';
import { allowsModel } from '../../commands/enterprise/enterprise';
import type { Enterprises } from '../../commands/enterprise/service';
import type { ModelRegistry } from '../../config/registry';
import { GatewayError } from '../errors';
import type { KnowledgeQueries } from '../../projections/knowledge/queries';
import type { Router } from '../../channels/routing';
import { sessionOf } from './pin';
import { INJECTED_PAGES, latestUserText, rewriteAgentBody, type InjectedPage } from './rewrite';
import { callerGroup } from '../../channels/groups';

export interface AgentCallDeps {
  readonly enterprises: Enterprises;
  readonly knowledge: KnowledgeQueries;
  readonly registry: ModelRegistry;
  readonly router: Router;
}

/** The agent switches and the built-in tool each turns on. */
const SWITCHED_TOOLS = [
  ['web_search', 'web_search'],
  ['drawing', 'image_generation'],
] as const;

/** At most this many words of the latest user message make the knowledge search. */
const SEARCH_TERMS = 32;

const denied = (message: string) => new GatewayError('permission_denied', message);

/** The latest user message as a full-text query that any of its words may match (ranked by how many). */
export function searchQuery(text: string): string {
  const words = text.match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.slice(0, SEARCH_TERMS).join(' or ');
}

/**
 * What an agent key's chat call becomes before the relay: the agent, its enterprise and its
 * knowledge read here (the I/O), the body rewritten by the pure `rewriteAgentBody`, and the session
 * to pin. Throws the client's refusal (Errors rule 9): 403 for a deleted or unpublished agent, a key
 * of another enterprise, a model off the enterprise's allow-list or a knowledge base its creator can
 * no longer read; 400 for a bad body or an image to a model without vision.
 */
export async function prepareAgentCall(deps: AgentCallDeps, request: FastifyRequest): Promise<{ body: Record<string, unknown>; session: string | undefined; agentId: string }> {
  const caller = request.caller!;
  const agentId = caller.key.agentId!;
  const agent = await deps.enterprises.recentAgent(agentId);
  if (agent.status !== 'active') throw denied('The agent of this key was deleted.');
  if (!agent.settings.published) throw denied('The agent of this key is not published.');
  if (agent.enterpriseId !== caller.accountId) throw denied('This key belongs to another enterprise than its agent.');
  const enterprise = await deps.enterprises.recentEnterprise(agent.enterpriseId);
  if (!enterprise.exists) throw denied('The account of this key is no longer an enterprise.');

  const wanted = agent.settings.model ?? enterprise.defaultModel ?? deps.registry.config.agents?.default_model ?? null;
  if (wanted === null) throw new GatewayError('model_not_found', 'The agent names no model, its enterprise has no default model and the platform names none.');
  const model = deps.registry.resolve(wanted);
  if (!model) throw new GatewayError('model_not_found', `The agent's model \`${wanted}\` is not in the catalogue.`);
  if (!allowsModel(enterprise, model.id)) throw denied(`The agent's model \`${model.id}\` is not on the enterprise's model allow-list.`);

  let pages: InjectedPage[] = [];
  if (agent.settings.kb_ids.length > 0) {
    // Knowledge is what the agent's creator can read now: a base shared with them then taken away is refused.
    const readable = await deps.knowledge.readableKbs(agent.creatorAccountId);
    const attached = agent.settings.kb_ids.map((id) => readable.find((kb) => kb.kbId === id));
    const missing = agent.settings.kb_ids.filter((_, i) => attached[i] === undefined);
    if (missing.length > 0) throw denied(`A knowledge base attached to the agent is no longer readable by its creator: ${missing.join(', ')}.`);
    const kbs = attached.filter((kb) => kb !== undefined);
    const query = searchQuery(latestUserText(request.body));
    if (query !== '') {
      const { hits } = await deps.knowledge.search(kbs, query, INJECTED_PAGES, 0);
      for (const hit of hits) {
        const kb = kbs.find((k) => k.kbId === hit.kb_id);
        const page = kb ? await deps.knowledge.page(kb, hit.id) : null;
        if (page) pages.push({ kbId: hit.kb_id, id: hit.id, title: page.title, body: page.body === '' ? page.summary : page.body });
      }
    }
  }

  const routes = deps.router.scoped(callerGroup(caller)).routes(model.id, 'chat-completions');
  const builtinTools = SWITCHED_TOOLS.filter(([flag, tool]) => agent.settings[flag] && routes.some((r) => r.channel.tools.includes(tool))).map(([, tool]) => tool);
  const rewritten = rewriteAgentBody(request.body, { agent: agent.settings, model: model.id, vision: model.capabilities.includes('vision'), builtinTools, pages });
  if ('error' in rewritten) throw new GatewayError(rewritten.error.code, rewritten.error.message);
  return { body: rewritten.body, session: sessionOf(request.headers), agentId };
}
