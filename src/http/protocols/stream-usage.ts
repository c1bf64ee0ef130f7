import type { Usage } from '../../upstream/contract';
import { tokensFromChars } from '../../upstream/pricing';

/** How a stream's end went, as far as billing is concerned. */
export interface StreamEnd {
  /** The pre-charge estimate (its prompt is billed when the upstream reported no usage). */
  readonly estimate: Usage;
  /** The upstream's own usage report, if one arrived. */
  readonly reported: Usage | null;
  /** Output characters in the upstream events the gateway saw. */
  readonly observedChars: number;
  /** Output characters in the writes the client's socket accepted (see ClientStream). */
  readonly acceptedChars: number;
  /** The client's socket accepted everything that was written to it. */
  readonly delivered: boolean;
  /** Built-in tool results the stream delivered (billed when no usage report counts them). */
  readonly toolCalls?: Usage['toolCalls'];
}

/**
 * The usage a stream is settled on (Billing 4: interrupted streams on actual usage, output from
 * characters when no usage arrived), counting only what reached the client:
 * - everything written was accepted: the upstream's usage, else the prompt estimate and the output
 *   characters seen (never 0 output when output went out);
 * - the client went away, or stopped reading until the deadline, with output still undelivered:
 *   the prompt as reported (else estimated), and the output in proportion to the characters its
 *   socket accepted — the reported output × accepted / seen characters, or the accepted
 *   characters / 4 when no usage arrived. Never more than the upstream reported.
 */
export function streamUsage(end: StreamEnd): Usage {
  const { reported, observedChars, acceptedChars, delivered } = end;
  // No report: the prompt estimate, and the tool results seen go by (an image delivered is billed).
  const estimate: Usage = end.toolCalls ? { ...end.estimate, toolCalls: end.toolCalls } : end.estimate;
  if (delivered || (reported !== null && observedChars === 0)) {
    if (!reported) return { ...estimate, outputTokens: tokensFromChars(observedChars) };
    return reported.outputTokens === 0 && observedChars > 0 ? { ...reported, outputTokens: tokensFromChars(observedChars) } : reported;
  }
  if (!reported || reported.outputTokens === 0) return { ...(reported ?? estimate), outputTokens: tokensFromChars(acceptedChars), reasoningTokens: 0 };
  const share = Math.min(1, acceptedChars / observedChars);
  return {
    ...reported,
    outputTokens: Math.min(reported.outputTokens, Math.ceil(reported.outputTokens * share)),
    reasoningTokens: Math.min(reported.reasoningTokens, Math.ceil(reported.reasoningTokens * share)),
  };
}
