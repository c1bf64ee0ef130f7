/**
 * The floor of issue 35: what a gateway's least work costs. fastify 5 + undici, `POST /v1/chat/completions`
 * with no auth and no ledger, but JSON both ways as a gateway must: the request is parsed (fastify) and
 * serialised again for the upstream, the upstream's answer is read whole, parsed and serialised again; a
 * stream is passed on frame by frame, each `data:` frame's JSON parsed and serialised again (where a gateway
 * reads the usage). `passthrough.ts` is the barer reference (the answer piped through unread): the two
 * differ by the JSON work. Run by hand by side-by-side.ts, never by CI:
 *
 *   node --import tsx bench/chat-overhead/floor.ts --port 8091 --upstream http://127.0.0.1:8090
 */
import { Readable } from 'node:stream';
import Fastify from 'fastify';
import { Agent, request } from 'undici';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const port = Number(arg('--port') ?? 8091);
const upstream = arg('--upstream') ?? 'http://127.0.0.1:8090';
const agent = new Agent({ keepAliveTimeout: 30_000, connections: 512 });

/** SSE frames of `body` as they arrive, each `data:` JSON parsed and serialised again. */
async function* frames(body: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = '';
  for await (const part of body) {
    pending += decoder.decode(part, { stream: true });
    let end: number;
    while ((end = pending.indexOf('\n\n')) !== -1) {
      const frame = pending.slice(0, end);
      pending = pending.slice(end + 2);
      const data = frame.startsWith('data: ') ? frame.slice(6) : null;
      yield data === null || data === '[DONE]' ? `${frame}\n\n` : `data: ${JSON.stringify(JSON.parse(data))}\n\n`;
    }
  }
  if (pending) yield pending;
}

const app = Fastify({ logger: false, bodyLimit: 100 * 1024 * 1024 });
app.post('/v1/chat/completions', async (req, reply) => {
  const response = await request(`${upstream}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sim-key' },
    body: JSON.stringify(req.body),
    dispatcher: agent,
  });
  const type = response.headers['content-type'];
  reply.code(response.statusCode);
  if (typeof type === 'string' && type.startsWith('text/event-stream')) {
    return reply.type(type).send(Readable.from(frames(response.body)));
  }
  return reply.type('application/json').send(JSON.stringify(await response.body.json()));
});
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`floor listening on http://127.0.0.1:${port}\n`);
const stop = () => void app.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
