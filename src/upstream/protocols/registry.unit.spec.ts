import { describe, expect, it } from 'vitest';
import { CHAT_PROTOCOLS } from '../../config/schema';
import { CHAT_PROTOCOL_REGISTRY } from './registry';

// What a new registration must get right that the types do not check (src/upstream/README.md, "Adding a chat protocol").
describe('the chat protocols registry', () => {
  it.each(CHAT_PROTOCOLS)('registers %s with its own adapter and translator, and a probe request its adapter accepts', (protocol) => {
    const { adapter, translator, probe } = CHAT_PROTOCOL_REGISTRY[protocol];
    expect(adapter.protocol).toBe(protocol);
    expect(translator.protocol).toBe(protocol);
    const info = adapter.inspect(probe.body('m-1'), probe.params?.('m-1') ?? {});
    expect(info).toMatchObject({ model: 'm-1', stream: false });
  });

  it('ends a stream cut by the shutdown with a frame of each protocol', () => {
    const error = { code: 'gateway_shutting_down', message: 'bye' };
    const frames = Object.fromEntries(CHAT_PROTOCOLS.map((p) => [p, CHAT_PROTOCOL_REGISTRY[p].shutdownFrame({ error: { message: 'bye' } }, error)]));
    expect(frames['chat-completions']).toEqual({ text: 'data: {"error":{"message":"bye"}}\n\n' });
    expect(frames.messages).toEqual({ text: 'event: error\ndata: {"error":{"message":"bye"}}\n\n' });
    expect(frames.responses).toEqual({ text: 'event: error\ndata: {"type":"error","code":"gateway_shutting_down","message":"bye","param":null}\n\n' });
    expect(frames['generate-content']).toMatchObject({ pauseFirst: true });
  });
});
