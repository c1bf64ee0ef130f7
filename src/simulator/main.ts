/**
 * Runs the simulator on its own: `npx tsx src/simulator/main.ts [--port 8090] [--host 127.0.0.1]`
 * (defaults: PORT from SIMULATOR_URL, else 8090).
 */
import { startSimulator } from './server';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
}

const fromEnv = process.env.SIMULATOR_URL ? new URL(process.env.SIMULATOR_URL) : undefined;
const port = Number(arg('port') ?? fromEnv?.port ?? 8090);
const host = arg('host') ?? fromEnv?.hostname ?? '127.0.0.1';
const sim = await startSimulator({ port, host });
process.stdout.write(`upstream simulator listening on ${sim.url}\n`);
const stop = (): void => {
  void sim.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
