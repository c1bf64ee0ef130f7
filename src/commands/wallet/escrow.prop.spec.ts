/**
 * Escrow of agent keys (docs/agents.md, "Escrow"): a model-based property test. An enterprise wallet
 * funds escrows for a few keys, the keys reserve / settle / release against them, ordinary calls
 * draw on the rest, and escrows are returned. An independent model predicts every refusal and
 * every amount; after each step money is conserved exactly and the available balance is what the
 * model says; at the end, with every hold closed and every escrow returned, nothing is set aside.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decide, type WalletCommand } from './decider';
import { available, escrowLeft, evolve, initialWalletState, type WalletState } from './state';

const NOW = 1_700_000_000;
const USD = 1_000_000_000n;
const KEYS = ['k1', 'k2', 'k3'] as const;

type Step =
  | { type: 'TopUp'; amount: bigint }
  | { type: 'Fund'; key: string; amount: bigint }
  | { type: 'Reserve'; key: string | null; amount: bigint }
  | { type: 'Settle'; index: number; percent: number; over: bigint }
  | { type: 'Release'; index: number }
  | { type: 'Return'; key: string };

const key = fc.constantFrom(...KEYS);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 1, arbitrary: fc.bigInt({ min: 135n * USD, max: 300n * USD }).map((amount) => ({ type: 'TopUp' as const, amount })) },
  { weight: 3, arbitrary: fc.record({ key, amount: fc.bigInt({ min: -1n, max: 80n * USD }) }).map((r) => ({ type: 'Fund' as const, ...r })) },
  {
    weight: 6,
    arbitrary: fc
      .record({ key: fc.option(key, { freq: 4 }), amount: fc.oneof(fc.bigInt({ min: 0n, max: 30n * USD }), fc.bigInt({ min: 0n, max: 1000n })) })
      .map((r) => ({ type: 'Reserve' as const, ...r })),
  },
  {
    weight: 5,
    arbitrary: fc
      .record({ index: fc.nat(20), percent: fc.integer({ min: 0, max: 100 }), over: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 5n * USD })) })
      .map((r) => ({ type: 'Settle' as const, ...r })),
  },
  { weight: 2, arbitrary: fc.nat(20).map((index) => ({ type: 'Release' as const, index })) },
  { weight: 1, arbitrary: key.map((k) => ({ type: 'Return' as const, key: k })) },
);

interface ModelEscrow {
  funded: bigint;
  spent: bigint;
  held: bigint;
  open: boolean;
  returned: bigint;
}

class Model {
  balance = 40n * USD;
  credited = 40n * USD;
  captured = 0n;
  holds = new Map<string, { key: string | null; amount: bigint }>();
  escrows = new Map<string, ModelEscrow>();

  left(k: string | null): bigint {
    const e = k === null ? undefined : this.escrows.get(k);
    if (!e || !e.open) return 0n;
    const left = e.funded - e.spent - e.held;
    return left > 0n ? left : 0n;
  }
  escrowed(): bigint {
    let sum = 0n;
    for (const k of this.escrows.keys()) sum += this.left(k);
    return sum;
  }
  held(): bigint {
    let sum = 0n;
    for (const h of this.holds.values()) sum += h.amount;
    return sum;
  }
  available(): bigint {
    return this.balance - this.held() - this.escrowed();
  }
}

function run(state: WalletState, command: WalletCommand): { state: WalletState; ok: boolean; code?: string } {
  const decision = decide(command, state);
  if (!decision.ok) return { state, ok: false, code: decision.error.code };
  return { state: decision.events.reduce(evolve, state), ok: true };
}

function check(state: WalletState, model: Model) {
  expect(state.balance).toBe(model.balance);
  expect(state.held).toBe(model.held());
  expect(state.escrowed).toBe(model.escrowed());
  expect(available(state)).toBe(model.available());
  // Money is conserved: credits = balance + captured charges; the escrows are a part of the balance.
  expect(state.credited).toBe(state.balance + state.captured);
  expect(state.balance).toBe(available(state) + state.held + state.escrowed);
  for (const [k, e] of model.escrows) {
    expect(escrowLeft(state, k)).toBe(model.left(k));
    expect(state.escrows.get(k)).toEqual({ funded: e.funded, open: e.open, returned: e.returned });
  }
}

function simulate(steps: readonly Step[], allowOverrun: boolean) {
  const model = new Model();
  let state = evolve(evolve(initialWalletState, { type: 'AccountOpened', data: { account_id: 'ent', name: 'ent', at: NOW } }), {
    type: 'CreditGranted',
    data: { grant_id: 'g', amount: 40n * USD, reason: 'signup', at: NOW },
  });
  let holdSeq = 0;
  const openHolds = () => [...model.holds.keys()];
  for (const s of steps) {
    switch (s.type) {
      case 'TopUp': {
        const r = run(state, { type: 'TopUp', topupId: `t${holdSeq}`, amount: s.amount, reference: `ref${holdSeq++}`, now: NOW });
        expect(r.ok).toBe(true);
        state = r.state;
        model.balance += s.amount;
        model.credited += s.amount;
        break;
      }
      case 'Fund': {
        const r = run(state, { type: 'FundEscrow', keyId: s.key, amount: s.amount, requestId: `req-${s.key}`, now: NOW });
        state = r.state;
        if (model.escrows.has(s.key)) expect(r).toMatchObject({ ok: true });
        else if (s.amount <= 0n) expect(r.code).toBe('invalid_amount');
        else if (s.amount > model.available()) expect(r.code).toBe('insufficient_funds');
        else {
          expect(r.ok).toBe(true);
          model.escrows.set(s.key, { funded: s.amount, spent: 0n, held: 0n, open: true, returned: 0n });
        }
        break;
      }
      case 'Reserve': {
        const holdId = `h${holdSeq++}`;
        // An escrow key exists only once its escrow is funded (its approval): before that, an ordinary call.
        const keyId = s.key !== null && model.escrows.has(s.key) ? s.key : null;
        const r = run(state, { type: 'Reserve', holdId, amount: s.amount, keyId, spendCap: null, purpose: 'chat m', expiresAt: NOW + 300, now: NOW });
        state = r.state;
        const escrow = keyId === null ? undefined : model.escrows.get(keyId);
        const allowed = escrow ? s.amount <= model.left(keyId) : s.amount <= model.available();
        if (!allowed) {
          expect(r.code).toBe(escrow ? 'spend_cap_exceeded' : 'insufficient_funds');
          break;
        }
        expect(r.ok).toBe(true);
        model.holds.set(holdId, { key: keyId, amount: s.amount });
        if (escrow) escrow.held += s.amount;
        break;
      }
      case 'Settle': {
        const ids = openHolds();
        if (ids.length === 0) break;
        const holdId = ids[s.index % ids.length]!;
        const hold = model.holds.get(holdId)!;
        const amount = (hold.amount * BigInt(s.percent)) / 100n + (allowOverrun ? s.over : 0n);
        const r = run(state, { type: 'Settle', holdId, amount, now: NOW });
        expect(r.ok).toBe(true);
        state = r.state;
        model.holds.delete(holdId);
        model.balance -= amount;
        model.captured += amount;
        const e = hold.key === null ? undefined : model.escrows.get(hold.key);
        if (e) {
          e.held -= hold.amount;
          e.spent += amount;
        }
        break;
      }
      case 'Release': {
        const ids = openHolds();
        if (ids.length === 0) break;
        const holdId = ids[s.index % ids.length]!;
        const hold = model.holds.get(holdId)!;
        const r = run(state, { type: 'Release', holdId, reason: 'failed', now: NOW });
        expect(r.ok).toBe(true);
        state = r.state;
        model.holds.delete(holdId);
        const e = hold.key === null ? undefined : model.escrows.get(hold.key);
        if (e) e.held -= hold.amount;
        break;
      }
      case 'Return': {
        const r = run(state, { type: 'ReturnEscrow', keyId: s.key, now: NOW });
        state = r.state;
        const e = model.escrows.get(s.key);
        if (!e) {
          expect(r.code).toBe('escrow_not_found');
          break;
        }
        expect(r.ok).toBe(true);
        if (e.open) {
          e.returned = model.left(s.key);
          e.open = false;
        }
        break;
      }
    }
    check(state, model);
  }
  return { state, model };
}

describe('escrow of agent keys (model-based)', () => {
  it('funds, draws and returns escrows conserving money exactly (settlements within their holds)', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const { state, model } = simulate(steps, false);
        // Within its holds an escrow key never spends more than its cap, and every unit of an escrow
        // is spent, held, still set aside, or returned.
        for (const [k, e] of model.escrows) {
          expect(e.spent).toBeLessThanOrEqual(e.funded);
          const usage = state.keys.get(k) ?? { spent: 0n, held: 0n };
          expect(usage.spent).toBe(e.spent);
          if (e.open) expect(e.spent + e.held + escrowLeft(state, k)).toBe(e.funded);
          else expect(e.returned).toBeLessThanOrEqual(e.funded - e.spent);
        }
        // Close everything: every hold released, every escrow returned: nothing is set aside any more.
        let end = state;
        for (const holdId of model.holds.keys()) end = run(end, { type: 'Release', holdId, reason: 'end', now: NOW }).state;
        for (const k of model.escrows.keys()) end = run(end, { type: 'ReturnEscrow', keyId: k, now: NOW }).state;
        expect(end.held).toBe(0n);
        expect(end.escrowed).toBe(0n);
        expect(available(end)).toBe(end.balance);
        expect(end.balance).toBe(model.credited - model.captured);
        for (const [k, e] of model.escrows) {
          const closed = end.escrows.get(k)!;
          // Once the holds are closed, an escrow returns exactly its cap less what its key spent.
          if (e.open) expect(closed.returned).toBe(e.funded - e.spent);
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 2000) },
    );
  });

  it('a settlement above its hold overdraws the escrow from the enterprise balance, still conserving money', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        simulate(steps, true);
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 1000) },
    );
  });
});
