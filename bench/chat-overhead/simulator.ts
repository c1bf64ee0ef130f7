/**
 * The upstream simulator as the benchmark runs it: the same server as
 * `src/simulator/main.ts`, except that its request recorder (`sim.requests`, kept for tests)
 * is emptied every second, so hundreds of thousands of requests do not pile up in its heap and
 * slow the baseline down with garbage collection.
 *
 *   node --import tsx bench/chat-overhead/simulator.ts --port 8090
 */
import { startSimulator } from '../../src/simulator/index';

const i = process.argv.indexOf('--port');
const port = i === -1 ? 0 : Number(process.argv[i + 1]);
const sim = await startSimulator({ port, host: '127.0.0.1' });
const timer = setInterval(() => sim.reset(), 1000);
process.stdout.write(`upstream simulator listening on ${sim.url}\n`);
const stop = (): void => {
  clearInterval(timer);
  void sim.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
