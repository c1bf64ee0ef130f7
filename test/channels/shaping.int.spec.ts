import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

/** A local stand-in for an Azure OpenAI resource: deployments in the path, `api-version` required, the key in `api-key`. */
interface AzureSeen {
  path: string;
  apiVersion: string | null;
  apiKey: string | undefined;
  authorization: string | undefined;
  org: string | undefined;
  body: { model?: string; stream?: boolean };
}
const seen: AzureSeen[] = [];
const readBody = async (request: IncomingMessage) => {
  let text = '';
  for await (const chunk of request) text += String(chunk);
  return text;
};
const azure: Server = createServer(async (request, response) => {
  const url = new URL(request.url!, 'http://azure.local');
  const body = JSON.parse((await readBody(request)) || '{}') as AzureSeen['body'];
  seen.push({ path: url.pathname, apiVersion: url.searchParams.get('api-version'), apiKey: request.headers['api-key'] as string | undefined, authorization: request.headers.authorization, org: request.headers['x-org'] as string | undefined, body });
  const deployment = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(url.pathname)?.[1];
  if (request.headers['api-key'] !== 'azure-secret') {
    response.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: '401', message: 'Access denied due to invalid subscription key.' } }));
    return;
  }
  if (!deployment || url.searchParams.get('api-version') !== '2024-10-21') {
    response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist.' } }));
    return;
  }
  const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
  const message = `from ${deployment}`;
  if (body.stream) {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { role: 'assistant', content: message }, finish_reason: null }] })}\n\n`);
    response.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
    response.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [], usage })}\n\n`);
    response.end('data: [DONE]\n\n');
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: message }, finish_reason: 'stop' }], usage }));
});

/** A corporate egress proxy: HTTP CONNECT tunnels, counted. */
const tunnels: string[] = [];
const proxy: Server = createServer((_request, response) => response.writeHead(405).end());
proxy.on('connect', (request: IncomingMessage, socket, head) => {
  tunnels.push(request.url!);
  const [host, port] = request.url!.split(':');
  const upstream = connect(Number(port), host!, () => {
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  upstream.on('error', () => socket.destroy());
  socket.on('error', () => upstream.destroy());
});

const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
const model = (id: string) => textModel(id);

let h: SimulatedGateway;
let openai: OpenAI;
beforeAll(async () => {
  const azurePort = await listen(azure);
  const proxyPort = await listen(proxy);
  h = await startSimulatedGateway(
    (sim: Simulator) =>
      ({
        models: [model('gpt-4o'), model('proxied-model')],
        channels: [
          {
            ...simulatorChannel(sim, 'azure-east', 'chat-completions', []),
            base_url: `http://127.0.0.1:${azurePort}`,
            api_key: 'azure-secret',
            models: { 'gpt-4o': 'my-gpt4o-deployment' },
            path_template: '/openai/deployments/{model}/chat/completions',
            query: { 'api-version': '2024-10-21' },
            auth_header: 'api-key',
            headers: { 'X-Org': 'acme' },
          },
          simulatorChannel(sim, 'egress', 'chat-completions', ['proxied-model'], { proxy: `http://127.0.0.1:${proxyPort}` }),
        ],
        channel_health: { failures_before_cooldown: 3, cooldown_s: 30, max_cooldown_s: 60, probe_interval_s: 0 },
      }) as GatewayConfig,
    { chatTimeoutMs: 5000 },
  );
  const { key } = await h.t.accountWithKey();
  openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h.close();
  await new Promise((resolve) => azure.close(resolve));
  proxy.closeAllConnections?.();
  await new Promise((resolve) => proxy.close(resolve));
});

describe('per-channel request shaping', () => {
  it('an Azure-style channel: deployment path, api-version query, api-key header, extra headers', async () => {
    const answer = await openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]!.message.content).toBe('from my-gpt4o-deployment');
    expect(seen.at(-1)).toMatchObject({ path: '/openai/deployments/my-gpt4o-deployment/chat/completions', apiVersion: '2024-10-21', apiKey: 'azure-secret', authorization: undefined, org: 'acme' });

    const stream = await openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('from my-gpt4o-deployment');
    expect(seen.at(-1)!.body.stream).toBe(true);
  });

  it('a probe is shaped the same way', async () => {
    const probed = await h.t.admin('POST', '/channels/azure-east/probe');
    expect(probed.json()).toMatchObject({ probe: 'ok' });
    expect(seen.at(-1)).toMatchObject({ path: '/openai/deployments/my-gpt4o-deployment/chat/completions', apiVersion: '2024-10-21', apiKey: 'azure-secret' });
  });

  it('a channel with a proxy reaches its upstream through a CONNECT tunnel', async () => {
    const before = tunnels.length;
    const answer = await openai.chat.completions.create({ model: 'proxied-model', messages: [{ role: 'user', content: 'through the proxy' }] });
    expect(answer.choices[0]!.message.content).toBe('Echo: through the proxy');
    expect(tunnels.length).toBe(before + 1);
    expect(tunnels.at(-1)).toBe(new URL(h.sim.url).host);
  });
});
