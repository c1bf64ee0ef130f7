/**
 * A minimal upstream for the benchmarks (`--upstream fixed`): plain `node:http`, one fixed chat-completions
 * answer with `usage`, or, for a body asking `"stream": true`, 5 SSE chunks (the last one carrying `usage`)
 * and `data: [DONE]`. This is the mock of issue 35's independent run; the bundled simulator
 * (`simulator.ts`) does much more a request (key checks, scenarios, a recorder, token counting, echoing the
 * prompt), which changes the baseline and what shares core 0 with the load generator. Run by hand, never by CI:
 *
 *   node bench/chat-overhead/fixed-upstream.ts --port 8090     (through `--import tsx`)
 */
import { createServer } from 'node:http';

const i = process.argv.indexOf('--port');
const port = i === -1 ? 0 : Number(process.argv[i + 1]);

const usage = { prompt_tokens: 15, completion_tokens: 9, total_tokens: 24 };
const ANSWER = JSON.stringify({
  id: 'chatcmpl-fixed',
  object: 'chat.completion',
  created: 1_764_000_000,
  model: 'bench-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello, benchmark. This is a fixed answer.' }, finish_reason: 'stop' }],
  usage,
});
const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-fixed', object: 'chat.completion.chunk', created: 1_764_000_000, model: 'bench-mini', choices, ...extra })}\n\n`;
const STREAM = [
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
  chunk([{ index: 0, delta: { content: 'Hello, benchmark.' }, finish_reason: null }]),
  chunk([{ index: 0, delta: { content: ' This is a fixed answer.' }, finish_reason: null }]),
  chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
  chunk([], { usage }),
  'data: [DONE]\n\n',
];
const STREAMING = /"stream"\s*:\s*true/;

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (part: string) => (body += part));
  req.on('end', () => {
    if (!STREAMING.test(body)) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ANSWER) });
      res.end(ANSWER);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const frame of STREAM) res.write(frame);
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  const address = server.address() as { port: number };
  process.stdout.write(`fixed upstream listening on http://127.0.0.1:${address.port}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
