/** Which channels translate for which client protocols, as the registry and the router see it. */
import { describe, expect, it } from 'vitest';
import { ModelRegistry } from '../../src/config/registry';
import { ConfigSchema, type ChatProtocol } from '../../src/config/schema';
import { loadConfig } from '../../src/config/load';
import { builtinToolRoutes, translatedRoutes } from '../../src/http/protocols/translated';
import { Router } from '../../src/channels/routing';

const channel = (id: string, protocol: string, priority: number, translation?: unknown) => ({
  id,
  protocol,
  base_url: 'http://127.0.0.1:1',
  priority,
  models: ['m'],
  ...(translation === undefined ? {} : { translation }),
});
const config = (...channels: object[]) => ConfigSchema.parse({ models: [{ id: 'm', price: { input: '1', output: '1' } }], channels });

describe('translation in the config', () => {
  it('is on unless a channel turns it off or lists the client protocols it translates for', () => {
    const byDefault = new ModelRegistry(config(channel('a', 'messages', 0)));
    expect(byDefault.supportedProtocols('m')).toEqual(['chat-completions', 'messages', 'responses', 'generate-content']);
    const none = new ModelRegistry(config(channel('a', 'messages', 0, false)));
    expect(none.supportedProtocols('m')).toEqual(['messages']);
    const all = new ModelRegistry(config(channel('a', 'messages', 0, true)));
    expect(all.supportedProtocols('m')).toEqual(['chat-completions', 'messages', 'responses', 'generate-content']);
    const some = new ModelRegistry(config(channel('a', 'messages', 0, ['responses'])));
    expect(some.supportedProtocols('m')).toEqual(['messages', 'responses']);
    // A media channel has nothing to translate.
    expect(() => config(channel('i', 'images', 0, true))).not.toThrow();
    expect(new ModelRegistry(config(channel('i', 'images', 0, true))).supportedProtocols('m')).toEqual([]);
  });

  it('refuses a translation value that is no chat protocol', () => {
    expect(ConfigSchema.safeParse({ models: [{ id: 'm' }], channels: [channel('a', 'messages', 0, ['images'])] }).success).toBe(false);
  });

  it('routes a client to translating channels of every other protocol, by priority, at most three', () => {
    const router = new Router(
      config(
        channel('cc', 'chat-completions', 2, true),
        channel('msg', 'messages', 0, ['generate-content']),
        channel('resp', 'responses', 1, true),
        channel('gem', 'generate-content', 0, true),
        channel('cc2', 'chat-completions', 3, true),
        channel('off', 'responses', 0, false),
      ),
    );
    const ids = (client: ChatProtocol) => translatedRoutes(router, 'm', client).map((r) => `${r.channel.id}:${r.via}`);
    expect(ids('generate-content')).toEqual(['msg:messages', 'resp:responses', 'cc:chat-completions']);
    expect(ids('messages')).toEqual(['gem:generate-content', 'resp:responses', 'cc:chat-completions']);
    // The client's own protocol is never a translated route.
    expect(ids('chat-completions')).toEqual(['gem:generate-content', 'resp:responses']);
  });
});

describe('built-in tools in the demo config', () => {
  const router = new Router(loadConfig(undefined).config);
  const ids = (model: string, client: ChatProtocol, tools: string[]) => builtinToolRoutes(router, model, client, tools).map((r) => r.channel.id);

  it('sends image_generation from chat-completions clients of the newest responses family to its X1 channel', () => {
    for (const model of ['gpt-5', 'gpt-5-mini', 'gpt-5-nano']) {
      expect(ids(model, 'chat-completions', ['image_generation'])).toEqual(['openai-responses-x1-gpt5']);
      expect(ids(model, 'responses', ['image_generation'])).toEqual(['openai-responses-x1-gpt5']);
      expect(router.routes(model, 'responses').map((r) => r.channel.group)).toEqual(['X1']);
    }
  });

  it('has no channel for image_generation on any other model or client protocol', () => {
    for (const model of ['gpt-4o', 'o3', 'claude-sonnet-4-5', 'deepseek-chat']) expect(ids(model, 'chat-completions', ['image_generation'])).toEqual([]);
    // Neither the messages nor the generate-content protocol can ask for the image tool.
    expect(ids('gpt-5', 'messages', ['image_generation'])).toEqual([]);
  });

  it('keeps web_search on the native channel that lists it', () => {
    expect(ids('gpt-5', 'chat-completions', ['web_search'])).toEqual(['openai-chat']);
    expect(ids('gpt-5', 'chat-completions', ['web_search', 'image_generation'])).toEqual([]);
  });
});
