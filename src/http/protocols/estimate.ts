import type { ModelConfig } from '../../config/schema';
import type { ChatRequestInfo, Usage } from '../../upstream/contract';
import { estimateUsage } from '../../upstream/pricing';

/**
 * The pre-charge of a chat call (Billing 1): the worst case over every channel the call may try,
 * each as its channel is asked — the client's request on a native route; on a translated route the
 * re-encoded request, whose prompt the channel counts and which asks for as many answers as the
 * translation carried of the client's `n` / `candidateCount`. Each answer may reach the output cap.
 */
export function callEstimate(model: ModelConfig, asked: readonly ChatRequestInfo[]): Usage {
  return asked
    .map((request) => estimateUsage(model, request.promptDocument, request.maxTokens, request.choices))
    .reduce((a, b) => ({
      // The larger of each count (the smaller of the cached part): priced, at least every estimate.
      promptTokens: Math.max(a.promptTokens, b.promptTokens),
      cachedTokens: Math.min(a.cachedTokens, b.cachedTokens),
      cacheWriteTokens: Math.max(a.cacheWriteTokens, b.cacheWriteTokens),
      outputTokens: Math.max(a.outputTokens, b.outputTokens),
      reasoningTokens: Math.max(a.reasoningTokens, b.reasoningTokens),
    }));
}
