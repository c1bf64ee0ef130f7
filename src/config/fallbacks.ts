/** What the fallback rules need of a model config. */
export interface FallbackModel {
  readonly id: string;
  readonly kind: string;
  readonly endpoint_type?: string | null;
  readonly fallbacks?: readonly string[] | undefined;
}

/**
 * The models a chat call tries, in order: the model itself, then each of its `fallbacks` followed by that
 * model's own fallbacks (depth first), each model once. `byId` resolves canonical ids; an id it does not
 * know is left out (the config's validation refuses one, so this is only a reload's race).
 */
export function fallbackChain<M extends FallbackModel>(model: M, byId: (id: string) => M | undefined): M[] {
  const chain: M[] = [];
  const seen = new Set<string>();
  const visit = (m: M) => {
    if (seen.has(m.id)) return;
    seen.add(m.id);
    chain.push(m);
    for (const id of m.fallbacks ?? []) {
      const next = byId(id);
      if (next) visit(next);
    }
  };
  visit(model);
  return chain;
}

/** What is wrong with the models' `fallbacks` (the config's validation): an unknown id, another kind, a
 * model that is not a chat model, or a cycle (a model that comes back to itself through the chain). */
export function fallbackProblems(models: readonly FallbackModel[]): Array<{ index: number; message: string }> {
  const byId = new Map(models.map((m) => [m.id, m]));
  const problems: Array<{ index: number; message: string }> = [];
  models.forEach((model, index) => {
    const fallbacks = model.fallbacks ?? [];
    if (fallbacks.length === 0) return;
    if (model.kind !== 'text' || model.endpoint_type) {
      problems.push({ index, message: `model ${model.id}: fallbacks are tried by chat calls only (a text model without endpoint_type)` });
      return;
    }
    for (const id of fallbacks) {
      const other = byId.get(id);
      if (!other) problems.push({ index, message: `model ${model.id} falls back to unknown model ${id} (use canonical ids)` });
      else if (other.kind !== model.kind || other.endpoint_type) problems.push({ index, message: `model ${model.id} falls back to ${id}, a model of another kind` });
    }
    const cycle = cycleFrom(model.id, byId);
    if (cycle) problems.push({ index, message: `model ${model.id}: its fallbacks come back to it (${cycle.join(' -> ')})` });
  });
  return problems;
}

/** A path of fallbacks from `start` back to `start`, if there is one. */
function cycleFrom(start: string, byId: ReadonlyMap<string, FallbackModel>): string[] | null {
  const done = new Set<string>();
  const walk = (id: string, path: string[]): string[] | null => {
    for (const next of byId.get(id)?.fallbacks ?? []) {
      if (next === start) return [...path, next];
      if (done.has(next) || !byId.has(next)) continue;
      done.add(next);
      const found = walk(next, [...path, next]);
      if (found) return found;
    }
    return null;
  };
  return walk(start, [start]);
}
