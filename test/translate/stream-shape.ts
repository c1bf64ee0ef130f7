/**
 * Structural rules of each protocol's client stream, as the vendors document them: what an SDK
 * relies on beyond what its accumulator happens to check. Each returns the list of violations.
 */
import type { ChatProtocol } from '../../src/config/schema';
import type { WireEvent } from '../../src/upstream/translate';

type Json = Record<string, any>;
const parse = (e: WireEvent): Json => JSON.parse(e.data) as Json;

function chat(events: readonly WireEvent[]): string[] {
  const problems: string[] = [];
  if (events.at(-1)?.data !== '[DONE]') problems.push('the stream does not end with data: [DONE]');
  if (events.filter((e) => e.data === '[DONE]').length !== 1) problems.push('[DONE] is not sent exactly once');
  const chunks = events.filter((e) => e.data !== '[DONE]').map(parse);
  if (new Set(chunks.map((c) => c.id)).size !== 1) problems.push('chunks do not share one id');
  if (chunks.some((c) => c.object !== 'chat.completion.chunk')) problems.push('a chunk is not a chat.completion.chunk');
  if (chunks[0]?.choices?.[0]?.delta?.role !== 'assistant') problems.push('the first chunk does not carry the assistant role');
  const finishes = chunks.filter((c) => c.choices?.[0]?.finish_reason);
  if (finishes.length !== 1) problems.push(`${finishes.length} chunks carry a finish_reason`);
  const seen = new Set<number>();
  for (const c of chunks)
    for (const call of c.choices?.[0]?.delta?.tool_calls ?? []) {
      if (!seen.has(call.index) && !(call.id && call.function?.name)) problems.push(`tool call ${call.index} starts without id and name`);
      seen.add(call.index);
    }
  return problems;
}

function messages(events: readonly WireEvent[]): string[] {
  const problems: string[] = [];
  const types = events.map((e) => e.event);
  if (types[0] !== 'message_start') problems.push('the stream does not start with message_start');
  if (types.at(-1) !== 'message_stop' || types.at(-2) !== 'message_delta') problems.push('the stream does not end with message_delta, message_stop');
  let open: number | null = null;
  let next = 0;
  for (const e of events) {
    const data = parse(e);
    if (data.type !== e.event) problems.push(`event ${e.event} carries type ${data.type}`);
    if (e.event === 'content_block_start') {
      if (open !== null) problems.push(`block ${data.index} starts while ${open} is open`);
      if (data.index !== next) problems.push(`block ${data.index} starts, expected ${next}`);
      open = data.index;
      next += 1;
    } else if (e.event === 'content_block_delta' && data.index !== open) problems.push(`delta for block ${data.index} while ${open} is open`);
    else if (e.event === 'content_block_stop') {
      if (data.index !== open) problems.push(`stop of block ${data.index} while ${open} is open`);
      open = null;
    } else if (e.event === 'message_delta' && open !== null) problems.push('message_delta while a block is open');
  }
  return problems;
}

function responses(events: readonly WireEvent[]): string[] {
  const problems: string[] = [];
  const data = events.map(parse);
  data.forEach((d, i) => {
    if (d.sequence_number !== i) problems.push(`event ${i} has sequence_number ${d.sequence_number}`);
    if (d.type !== events[i]!.event) problems.push(`event ${events[i]!.event} carries type ${d.type}`);
  });
  if (data[0]?.type !== 'response.created' || data[1]?.type !== 'response.in_progress') problems.push('the stream does not start with response.created, response.in_progress');
  if (data[0]?.response?.usage !== null) problems.push('response.created carries usage');
  const last = data.at(-1);
  if (!['response.completed', 'response.incomplete'].includes(last?.type)) problems.push('the stream does not end with response.completed or response.incomplete');
  const added = data.filter((d) => d.type === 'response.output_item.added').map((d) => d.output_index);
  const done = data.filter((d) => d.type === 'response.output_item.done').map((d) => d.output_index);
  if (added.join() !== added.map((_, i) => i).join()) problems.push(`output items added at ${added.join()}`);
  if ([...done].sort().join() !== [...added].sort().join()) problems.push('an output item is not done');
  if (last?.response?.output?.length !== added.length) problems.push('the final response does not hold every output item');
  return problems;
}

function generateContent(events: readonly WireEvent[]): string[] {
  const problems: string[] = [];
  const data = events.map(parse);
  if (data.some((d) => !Array.isArray(d.candidates))) problems.push('a chunk has no candidates');
  const finishes = data.filter((d) => d.candidates?.[0]?.finishReason);
  if (finishes.length !== 1 || finishes[0] !== data.at(-1)) problems.push('the finish reason is not on the last chunk only');
  if (!data.at(-1)?.usageMetadata) problems.push('the last chunk has no usageMetadata');
  return problems;
}

export const STREAM_SHAPE: Record<ChatProtocol, (events: readonly WireEvent[]) => string[]> = {
  'chat-completions': chat,
  messages,
  responses,
  'generate-content': generateContent,
};
