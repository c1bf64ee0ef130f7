// Where a rebuild's time goes: each projection's applyBatch and the log reads, summed (ms), for one rebuild of all.
import { allProjections } from '../../src/projections';
import { ProjectionRunner } from '../../src/projections/runner/runner';
import { openStorage, settingsFromEnv } from '../../src/runtime/gateway';
import { storeWith } from '../../src/events/store/port';

const storage = await openStorage(settingsFromEnv(process.env));
const spent = new Map<string, number>();
const timed = <T>(name: string, p: Promise<T>) => {
  const t0 = performance.now();
  return p.finally(() => spent.set(name, (spent.get(name) ?? 0) + performance.now() - t0));
};
const projections = allProjections.map((p) => ({ ...p, applyBatch: (tx: never, items: never, writes: never) => timed(p.name, p.applyBatch(tx, items, writes)) }));
const store = storeWith(storage.store, { readAll: (o) => timed('readAll', storage.store.readAll(o)) });
const runner = new ProjectionRunner(storage.sql, store, projections as never);
await runner.migrate();
const t0 = performance.now();
await runner.rebuild(projections.map((p) => p.name));
const total = performance.now() - t0;
console.log('total', Math.round(total));
for (const [k, v] of spent) console.log(k, Math.round(v));
await storage.close();
