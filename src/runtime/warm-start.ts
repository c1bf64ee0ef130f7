import type { Sql } from '../storage/sql';
import { NotReady, type Check } from '../lifecycle/readiness';

/**
 * The first call of an account after a start reads its key and wallet (snapshot plus tail) and
 * decodes them, on code V8 has not compiled yet: about a hundred milliseconds of CPU where any
 * later call takes one or two. A warm start pays that before the instance says it is ready: the
 * keys used most recently (the `key_activity` view) and their accounts' wallets are loaded into the
 * ledger's caches, WARM_START_KEYS of them at most, within WARM_START_BUDGET_S. What is not loaded
 * by then is loaded by its first call, as before; a failure only ends the warm start early. The snapshot
 * backfill's time (long histories without a snapshot, src/commands/snapshot/backfill.ts) counts in the
 * same budget: ready once those are loaded too, or at the budget while the backfill goes on.
 */
export interface WarmStartOptions {
  /** How many of the most recently used keys (0: no warm start). */
  readonly keys: number;
  /** The most the warm start may take (ms); past it the instance is ready anyway. */
  readonly budgetMs: number;
  /** Loads run at once. */
  readonly concurrency?: number;
}

export interface WarmStartLoader {
  key(keyId: string): Promise<unknown>;
  wallet(accountId: string): Promise<unknown>;
}

export interface WarmStartOutcome {
  readonly keys: number;
  readonly accounts: number;
  readonly ms: number;
  /** Why it ended before loading everything it chose: `budget` or an error's message. */
  readonly cut: string | null;
}

/** The keys to warm, most recently used first, with their accounts. Active keys only. */
export async function recentKeys(sql: Sql, limit: number): Promise<Array<{ keyId: string; accountId: string }>> {
  if (limit <= 0) return [];
  const rows = await sql.query<{ key_id: string; account_id: string }>(
    `SELECT k.key_id, k.account_id FROM key_activity a JOIN api_keys k USING (key_id)
      WHERE k.status = 'active' ORDER BY a.last_used_at DESC LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ keyId: r.key_id, accountId: r.account_id }));
}

export class WarmStart {
  private outcome: WarmStartOutcome | null = null;
  private loaded = 0;
  private chosen = 0;

  constructor(private readonly options: WarmStartOptions) {}

  get done(): WarmStartOutcome | null {
    return this.outcome;
  }

  /** Loads what `choose` names into `loader`'s caches, then waits for `also` (the snapshot backfill),
   * all within the budget (`also` goes on past it); never throws. */
  async run(choose: () => Promise<Array<{ keyId: string; accountId: string }>>, loader: WarmStartLoader, also?: Promise<unknown>): Promise<WarmStartOutcome> {
    const started = performance.now();
    const deadline = started + this.options.budgetMs;
    let cut: string | null = null;
    const accounts = new Set<string>();
    let keys = 0;
    try {
      const chosen = this.options.keys > 0 ? await choose() : [];
      this.chosen = chosen.length;
      let next = 0;
      const worker = async () => {
        while (next < chosen.length && cut === null) {
          if (performance.now() > deadline) {
            cut = 'budget';
            return;
          }
          const { keyId, accountId } = chosen[next++]!;
          await loader.key(keyId);
          keys += 1;
          if (!accounts.has(accountId)) {
            accounts.add(accountId);
            await loader.wallet(accountId);
          }
          this.loaded += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, this.options.concurrency ?? 4) }, worker));
      if (also && this.options.keys > 0 && cut === null) {
        let timer: NodeJS.Timeout | undefined;
        const over = new Promise<'budget'>((resolve) => (timer = setTimeout(() => resolve('budget'), Math.max(0, deadline - performance.now()))));
        cut = (await Promise.race([also.then(() => null), over])) ?? null;
        clearTimeout(timer);
      }
    } catch (error) {
      cut = error instanceof Error ? error.message : String(error);
    }
    this.outcome = { keys, accounts: accounts.size, ms: Math.round(performance.now() - started), cut };
    return this.outcome;
  }

  /** `/readyz`'s part: failing until the warm start has ended (whichever way). */
  check(): Check {
    return {
      part: 'warm_start',
      run: async () => {
        if (this.outcome === null) throw new NotReady(`loading the most recently used keys and wallets (${this.loaded} of ${this.chosen} keys)`);
        return { keys: this.outcome.keys, accounts: this.outcome.accounts, ms: this.outcome.ms };
      },
    };
  }
}
