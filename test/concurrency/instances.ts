import type { GatewayConfig } from '../../src/config/schema';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from '../support/gateway';
import { testDatabase, type TestDatabase } from '../support/storage';

/** Gateway instances sharing one database (and Redis when REDIS_URL is set): two on
 * Postgres, one in embedded mode, where PGlite belongs to a single process. */
export interface Cluster {
  readonly sim: Simulator;
  readonly db: TestDatabase;
  readonly instances: readonly TestGateway[];
  readonly urls: readonly string[];
  close(): Promise<void>;
}

export async function startCluster(config: (sim: Simulator) => GatewayConfig, options: Omit<TestGatewayOptions, 'config' | 'db'> = {}): Promise<Cluster> {
  const sim = await startSimulator();
  const db = await testDatabase();
  const count = db.label === 'postgres' ? 2 : 1;
  const instances: TestGateway[] = [];
  for (let i = 0; i < count; i++)
    instances.push(await startTestGateway({ ...options, config: config(sim), db: i === 0 ? db : { ...db, sql: db.another() } }));
  const urls: string[] = [];
  for (const t of instances) {
    await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
    urls.push(`http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`);
  }
  return {
    sim,
    db,
    instances,
    urls,
    async close() {
      for (const t of instances) await t.close();
      await db.drop();
      await sim.close();
    },
  };
}
