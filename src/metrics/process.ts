import { collectDefaultMetrics, Registry } from 'prom-client';

let registry: Registry | null = null;

/**
 * Node's process metrics (CPU, memory, event loop delay, GC, handles), prom-client's defaults, in
 * one registry per process, made on first use. Per process, not per gateway: they describe the
 * process, and each collection made starts an event-loop delay monitor and a GC observer that
 * are never stopped, which would pile up with every gateway a test process makes.
 */
export function processRegistry(): Registry {
  if (registry === null) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}
