/** The four protocol translators by protocol, and the one-call helpers built on them. */
import type { ChatProtocol } from '../../config/schema';
import { CHAT_PROTOCOL_REGISTRY } from '../protocols/registry';
import type { CanonicalEvent, ProtocolTranslator, StreamDecoder, StreamEncoder, WireEvent } from './canonical';

export * from './canonical';

/** Read from the protocol registry, which holds each protocol's translator beside its adapter. */
export const TRANSLATORS: Readonly<Record<ChatProtocol, ProtocolTranslator>> = Object.fromEntries(
  Object.entries(CHAT_PROTOCOL_REGISTRY).map(([protocol, entry]) => [protocol, entry.translator]),
) as Record<ChatProtocol, ProtocolTranslator>;

/** Whether a client of one protocol can have a built-in tool run by a channel of another: the
 * client's decoder reads it and the channel's encoder sends it (image_generation: chat-completions
 * clients on responses channels). */
export function carriesBuiltinTool(client: ChatProtocol, channel: ChatProtocol, tool: string): boolean {
  return (
    (TRANSLATORS[client].builtinTools.reads as readonly string[]).includes(tool) && (TRANSLATORS[channel].builtinTools.sends as readonly string[]).includes(tool)
  );
}

/** A stream translated on the fly: upstream vendor events in, client vendor events out. */
export interface StreamBridge {
  push(event: WireEvent): WireEvent[];
  end(): WireEvent[];
  /** Every canonical event so far (for tests and diagnostics). */
  readonly canonical: readonly CanonicalEvent[];
}

export function streamBridge(decoder: StreamDecoder, encoder: StreamEncoder): StreamBridge {
  const canonical: CanonicalEvent[] = [];
  const through = (events: CanonicalEvent[]) => {
    canonical.push(...events);
    return events.flatMap((e) => encoder.push(e));
  };
  return {
    push: (event) => through(decoder.push(event)),
    end: () => [...through(decoder.end()), ...encoder.end()],
    canonical,
  };
}
