/**
 * The conversation every client protocol must be able to hold with a model whose only channel
 * speaks another protocol: a text turn, then parallel tool calls and their results, streamed and
 * not, each call billed once on the usage the client was shown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatProtocol } from '../../src/config/schema';
import { CONVERSATION, FINISH, MODEL_OF, settlements, startHarness, type Harness } from './sdk-support';
import { PROTOCOLS } from './support';

export function clientSuite(client: ChatProtocol): void {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  const channels = PROTOCOLS.filter((p) => p !== client);
  describe.each(channels.flatMap((channel) => [false, true].map((stream) => [channel, stream] as const)))(
    `a ${client} client on a model served only by a %s channel (stream: %s)`,
    (channel, stream) => {
      it('holds a multi-turn conversation with parallel tool calls, billed once per call on the usage shown', async () => {
        const { accountId, key } = await h.t.accountWithKey();
        const conversation = CONVERSATION[client](h.baseUrl, key, MODEL_OF[channel]);

        const hello = await conversation.ask('Hello there', { stream });
        expect(hello.text).toBe('Echo: Hello there');
        expect(hello.finish).toBe(FINISH[client].stop);
        expect(hello.translation).toBe(`${client}->${channel}`);
        expect(hello.warning).toBeNull();
        const upstream = h.sim.requests.at(-1)!;
        expect(upstream.path).toBe(`/${channel === 'chat-completions' ? 'oa' : channel === 'messages' ? 'an' : channel === 'responses' ? 'rs' : 'gm'}-1/${upstream.path.split('/').slice(2).join('/')}`);
        expect(upstream.model).toBe(`${MODEL_OF[channel]}-upstream`);
        expect(upstream.stream).toBe(stream);

        const calls = await conversation.ask('Now call get_weather {"city":"Paris"} and get_time', { stream, tools: true });
        expect(calls.calls.map((c) => c.name)).toEqual(['get_weather', 'get_time']);
        expect(calls.calls[0]!.args).toEqual({ city: 'Paris' });
        // Arguments not written in the text are generated from the schema (a string timezone).
        expect(calls.calls[1]!.args).toEqual({ timezone: expect.any(String) });
        expect(calls.finish).toBe(FINISH[client].tools);

        const answered = await conversation.answer((c) => (c.name === 'get_weather' ? `sunny in ${(c.args as { city: string }).city}` : '14:05'), { stream });
        // The simulated model quotes each result as its channel received it: Gemini's is an object.
        const seen = (content: string) => (channel === 'generate-content' ? JSON.stringify({ result: content }) : content);
        expect(answered.text).toBe(`Tool get_weather returned: ${seen('sunny in Paris')}\nTool get_time returned: ${seen('14:05')}`);
        expect(answered.calls).toEqual([]);

        const followUp = await conversation.ask('Thanks', { stream });
        expect(followUp.text).toBe('Echo: Thanks');

        // Four calls, four settlements, each on exactly the usage the client was shown.
        const settled = await settlements(h, accountId, 4);
        expect(settled.map((s) => [s.call.status, s.call.input_tokens, s.call.output_tokens])).toEqual(
          [hello, calls, answered, followUp].map((turn) => ['success', turn.usage.prompt, turn.usage.output]),
        );
        for (const s of settled) expect(s.call.endpoint).toBe(client);
        const wallet = await h.t.gateway.ledger.wallet(accountId);
        expect(wallet.held).toBe(0n);
        expect(wallet.captured).toBe(settled.reduce((sum, s) => sum + BigInt((s as unknown as { captured: string }).captured), 0n));
      });
    },
  );
}
