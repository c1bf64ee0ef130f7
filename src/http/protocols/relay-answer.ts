import type { FastifyReply, FastifyRequest } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import type { CallRecord } from '../../events/catalog';
import type { ChatRequestInfo, ProtocolAdapter, StreamEvent, Usage } from '../../upstream/contract';
import { tokensFromChars } from '../../upstream/pricing';
import { checkUsage, isInvalidUsage, type UsageBounds } from '../../upstream/usage';
import { deliveredChars, OUTPUT_CUT } from '../../upstream/capture';
import { scrubbedFrame, scrubKeyShaped, type Scrub } from '../../upstream/scrub';
import type { CallSignal } from '../../upstream/upstream-call';
import { formatUsd } from '../../money/usd';
import { ClientStream } from './client-stream';
import { streamUsage } from './stream-usage';
import { writeShutdownFrame } from './shutdown-frame';
import type { Translation } from './translated';

// The answer of a chat call whose channel answered: passed to the client as it is (a stream as it
// arrives, with back-pressure), then settled on the usage it reported.

/** The header of a non-streamed chat answer that carries the call's settled cost in USD. */
export const COST_HEADER = 'x-gateway-cost';
/** Pause before a trailing out-of-framing piece (a bare error object) so it reaches the client on its own. */
const STRAY_GAP_MS = 50;
/** The most one upstream SSE event may hold (a partial line and the data lines of an event not yet
 * ended), in characters: room for a few base64 images in one `response.completed`; past it the
 * stream is treated as broken rather than buffered without end. */
export const MAX_EVENT_CHARS = 32 * 1024 * 1024;

function sse(event: StreamEvent): string {
  const lines = event.data.split('\n').map((line) => `data: ${line}`).join('\n');
  return `${event.event ? `event: ${event.event}\n` : ''}${lines}\n\n`;
}

/** Settles the call on `usage`; returns the amount captured (the cost header of a non-streamed answer).
 * `invalidUsage`: why the upstream's usage was not believed (the call is then billed on the estimate). */
export type Settle = (usage: Usage, status: CallRecord['status'], error?: { code: string; message: string }, invalidUsage?: string | null) => bigint;

export function relayBody(
  text: string,
  /** `text` parsed (relay.ts has already parsed it to judge the attempt). */
  json: unknown,
  response: Dispatcher.ResponseData,
  adapter: ProtocolAdapter,
  reply: FastifyReply,
  estimate: Usage,
  bounds: UsageBounds,
  settle: Settle,
  translation: Translation | null = null,
) {
  const report = checkUsage(adapter.usageOf(json), bounds);
  const invalid = isInvalidUsage(report) ? report.invalid : null;
  // No (believable) usage in a complete answer: bill the estimated prompt and the characters of the
  // text it delivered (not of its JSON).
  const usage = report !== null && !isInvalidUsage(report) ? report : { ...estimate, outputTokens: tokensFromChars(deliveredChars(json)) };
  // Translated: the answer in the client's protocol (billed on the channel's own usage). A
  // translation that throws is a 500, released unbilled by relayChat.
  const answer = translation ? JSON.stringify(translation.answer(json)) : text;
  const type = translation ? 'application/json' : response.headers['content-type'];
  // Queued as the answer leaves, in the same turn of the event loop: no later request (the
  // client's next one, a balance read) can be handled before the wallet has it. What it captures
  // is the cost header, exactly (a stream's headers leave before its cost is known).
  const captured = settle(usage, 'success', undefined, invalid);
  reply.header(COST_HEADER, formatUsd(captured));
  return reply.code(200).type(typeof type === 'string' ? type : 'application/json').send(answer);
}

export async function relayStream(
  /** The upstream body, or what reads it ahead. */
  body: AsyncIterable<unknown>,
  adapter: ProtocolAdapter,
  info: ChatRequestInfo,
  request: FastifyRequest,
  reply: FastifyReply,
  estimate: Usage,
  bounds: UsageBounds,
  /** Output characters past which the upstream is cut and the stream ended as a length stop. */
  charsLimit: number,
  settle: Settle,
  call: CallSignal,
  translation: Translation | null = null,
  /** The channel's credentials taken out of its error frames (src/upstream/scrub.ts). */
  scrub: Scrub = scrubKeyShaped,
) {
  // Translated: the channel's stream is watched by its own protocol's observer (usage, end) and
  // converted event by event into the client's protocol.
  const observer = (translation?.adapter ?? adapter).observe(info, request.body);
  const bridge = translation?.bridge() ?? null;
  const framing = adapter.clientFraming?.(request.query as Record<string, unknown>) ?? 'sse';
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    'content-type': framing === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/json; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-gateway-trace': request.id,
    ...(reply.getHeaders() as Record<string, string>),
  });
  const client = new ClientStream(raw, call);
  let elements = 0;
  let stray = '';
  let strayForwarded = false;
  let oversized = false;
  // Set once the upstream went on past the output bound: nothing more of it is relayed.
  let cut = false;
  const element = (data: string) => `${elements++ === 0 ? '[' : ',\r\n'}${data}`;
  const meter = request.callMeter;
  const write = (event: StreamEvent) => {
    meter?.firstByte();
    client.write(framing === 'sse' ? sse(event) : element(event.data));
  };
  const flushStray = () => {
    if (stray === '') return;
    // Outside the framing only an error object is forwarded: the upstream's text, never model output.
    const text = scrub(stray);
    stray = '';
    if (!observer.onStray?.(text) || client.gone) return;
    strayForwarded = true;
    // Translated: a bare error object is an event of the channel's protocol like any other.
    if (bridge) for (const event of bridge.push({ event: undefined, data: text.trim() })) write(event);
    else client.write(framing === 'sse' ? text : element(text.trim()));
  };
  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    // Lines that are no SSE field: kept together and offered to the adapter as one piece.
    onError(error) {
      if (error.type === 'unknown-field' && stray.length < 65_536) stray += `${error.line}\n`;
      if (error.type === 'max-buffer-size-exceeded') oversized = true;
    },
    onEvent(event) {
      if (cut) return;
      flushStray();
      const forwarded = scrubbedFrame({ event: event.event, data: event.data }, scrub);
      const before = observer.outputChars();
      const keep = observer.onEvent(forwarded);
      // The event that passes the bound is not relayed: an upstream cannot push one huge event through.
      if (observer.outputChars() > charsLimit) {
        cut = true;
        return;
      }
      // The output this event added is delivered with the client's next write.
      client.carry(observer.outputChars() - before);
      if (client.gone) return;
      // The bridge sees every event (the usage chunk the gateway asked for included).
      if (bridge) for (const out of bridge.push(forwarded)) write(out);
      else if (keep) write(forwarded);
    },
  });
  const decoder = new TextDecoder();
  let broken: string | null = null;
  try {
    for await (const chunk of body) {
      parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      if (oversized) throw new Error(`an upstream event exceeded ${MAX_EVENT_CHARS} characters`);
      // Back-pressure: the next upstream chunk is read once the client has taken this one's events.
      await client.drained();
      if (client.gone || cut) break;
    }
    if (cut && !client.gone) {
      // Leaving the loop closed the upstream's body; the client gets its protocol's length stop.
      for (const event of observer.lengthStop()) {
        observer.onEvent(event);
        if (bridge) for (const out of bridge.push(event)) write(out);
        else write(event);
      }
    } else if (!client.gone) {
      parser.feed(decoder.decode());
      parser.reset({ consume: true });
      // @google/genai recognises a bare error object only as a network read of its own:
      // let what went before leave first, as the upstream did.
      if (stray !== '' && framing === 'sse') await sleep(STRAY_GAP_MS);
      flushStray();
    }
  } catch (error) {
    broken = client.gone ? null : call.expired ? 'upstream_timeout' : call.shuttingDown ? 'gateway_shutting_down' : 'upstream_error';
    void error;
  }
  meter?.streamEnded();
  // The client protocol's terminator, written only when the channel's stream finished.
  if (bridge && !client.gone && broken === null) {
    try {
      for (const event of bridge.end()) write(event);
    } catch (error) {
      request.log.error({ err: error }, 'the end of a translated stream could not be converted');
      broken = 'internal_error';
    }
  }
  const finished = observer.completed() && broken === null && !client.gone;
  if (broken === 'gateway_shutting_down') await writeShutdownFrame(client, adapter, framing, elements);
  else if (!finished && framing === 'sse') for (const event of adapter.failureTail?.(info) ?? []) client.write(sse(event));
  // A JSON array is closed only when the stream really ended: a cut stays visibly cut.
  // An in-protocol error element ends the array as the upstream ended it, cleanly.
  const errorEnded = broken === null && (strayForwarded || (bridge?.canonical.some((e) => e.type === 'error') ?? false));
  if (framing === 'json-array' && (finished || errorEnded)) client.write(elements === 0 ? '[]' : ']');
  // Billed once the socket took the end (at once, normally) or the client is gone.
  const delivered = await client.end();
  if (!delivered) broken ??= call.shuttingDown ? 'gateway_shutting_down' : client.stalled ? 'client_timeout' : 'client_disconnected';
  const report = checkUsage(observer.usage(), bounds);
  const invalid = isInvalidUsage(report) ? report.invalid : null;
  const usage = streamUsage({
    estimate,
    reported: report !== null && !isInvalidUsage(report) ? report : null,
    observedChars: observer.outputChars(),
    acceptedChars: client.acceptedChars,
    delivered,
    toolCalls: observer.toolCalls?.(),
  });
  if (finished && delivered) settle(usage, 'success', cut ? OUTPUT_CUT : undefined, invalid);
  else {
    const code = broken ?? 'upstream_error';
    settle(usage, 'interrupted', { code, message: STREAM_ENDS[code] ?? 'the stream ended before its terminator' }, invalid);
  }
  return reply;
}

/** The call-log message of the ways a stream can end early other than the upstream's. */
const STREAM_ENDS: Readonly<Record<string, string>> = {
  client_disconnected: 'the client disconnected',
  client_timeout: 'the client did not read the stream within the request budget',
  internal_error: 'the gateway could not convert the end of the stream',
  gateway_shutting_down: 'the gateway shut down before the stream finished (its shutdown grace period ran out)',
};
