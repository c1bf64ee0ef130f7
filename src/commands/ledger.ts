/** The Ledger facade. Long (over 400 lines) and kept whole: one method per command of the wallet, key
 * and idempotent-call aggregates, each a few lines over the shared command handlers; splitting the
 * class would scatter one facade that every caller reads as a whole. */
import { createHash, randomUUID } from 'node:crypto';
import {
  idempotentCallStream,
  keyStream,
  walletStream,
  type CallRecord,
  type IdempotentCallEvent,
  type KeyEvent,
  type KeySettings,
  type WalletEvent,
} from '../events/catalog';
import type { EventStore, Position } from '../events/store/port';
import { generateApiKey } from '../secrets/api-key';
import type { KeyVault } from '../secrets/key-vault';
import { stateVersion } from './snapshot/codec';
import type { SnapshottedKind } from './snapshot/backfill';
import type { SnapshotStore } from './snapshot/store';
import type { DomainError } from './decision';
import { CommandHandler, type Handled } from './handle-command';
import { digestOfHold, idempotencyDigest, idempotentCallDecider, type IdempotentCallCommand, type IdempotentCallState } from './idempotent-call/decider';
import { keyDecider, type KeyCommand, type KeyState } from './key/decider';
import { RefusalBudget } from './refusal-budget';
import type { Snapshotting } from './stream-cache';
import { SIGNUP_GRANT, walletDecider, type AdjustmentCall, type WalletCommand } from './wallet/decider';
import { type WalletState } from './wallet/state';

/** How the appends that meter calls (reserve, settle, release, rejected calls) commit.
 * `sync`: each waits for the WAL flush like every other command. `async`: they return once
 * committed, without waiting for the flush; whoever holds the unflushed WAL can then lose the
 * last moments of call metering in a crash — calls that were served and are never charged,
 * never a charge without its call. On a Postgres server that is the server's crash only; on
 * PGlite it is the gateway's own (see defaultCallCommit). Money coming in (top-ups, grants)
 * and every admin command always wait for the flush. */
export type CallCommit = 'sync' | 'async';

/**
 * The commit of call metering when LEDGER_CALL_COMMIT is unset. On a Postgres server `async`: its
 * WAL writer flushes an asynchronous commit within moments, whatever becomes of the gateway. On
 * PGlite `sync`: PGlite runs Postgres single-user inside this process, with no WAL writer, so an
 * asynchronous commit stays in the process's memory until a later synchronous commit writes the
 * WAL out, and a kill of the gateway lost calls it had answered (issue 31: five of six). PGlite
 * never calls fsync, so its flush is a write into the operating system's cache: cheap, and kept
 * through a kill of the process (not through a power loss). EventStoreDB ignores the setting.
 */
export function defaultCallCommit(engine: EventStore['engine']): CallCommit {
  return engine === 'pglite' ? 'sync' : 'async';
}

export interface LedgerOptions {
  readonly now?: () => number;
  readonly callCommit?: CallCommit;
  /** Refused calls recorded per account and minute (see RefusalBudget). */
  readonly refusalsPerMinute?: number;
  /** Where the ledger reports what it did not do and nobody waits to hear (default: stderr). */
  readonly warn?: (fields: Record<string, unknown>, message: string) => void;
  /** Snapshots of wallets and keys (src/commands/snapshot); absent: every stream is read from its start. */
  readonly snapshots?: SnapshotStore;
  /** Events between two snapshots of a stream (default SNAPSHOT_EVERY). */
  readonly snapshotEvery?: number;
}

/** Events between two snapshots of a wallet or key: a first read after a restart reads at most about
 * this many events past the snapshot, whatever the stream's length. */
export const SNAPSHOT_EVERY = 1000;
/** Raised when a type inside WalletState or KeyState changes (a new field of the state itself
 * changes the version on its own: stateVersion). */
const WALLET_SNAPSHOT_VERSION = 1;
const KEY_SNAPSHOT_VERSION = 1;

/** How stale the cached key state may be when authentication reads it: a key changed
 * through another gateway instance takes effect here within this time. */
export const KEY_STATE_MAX_AGE_MS = 1000;

/** The same for the wallet's settings as authentication reads them (status, rate limits). */
export const WALLET_STATE_MAX_AGE_MS = 1000;

export type Result<T> = ({ ok: true; position: Position | null } & T) | { ok: false; error: DomainError };

const unixNow = () => Math.floor(Date.now() / 1000);

/** A new account's id (a sign-up claims its address under it before the account is opened). */
export const newAccountId = () => `acct_${randomUUID().replaceAll('-', '').slice(0, 24)}`;

function outcome<S, T>(handled: Handled<S>, value: (state: S) => T): Result<T> {
  if (!handled.ok) return { ok: false, error: handled.error };
  return { ok: true, position: handled.position, ...value(handled.state) };
}

export interface ReserveRequest {
  readonly holdId: string;
  readonly amount: bigint;
  readonly keyId: string | null;
  readonly purpose: string;
  /** Seconds until the sweeper may release the hold if nobody settles it. */
  readonly ttlSeconds: number;
  /** The key's spend cap when the caller has just read the key aggregate (authentication
   * does); otherwise it is read here. */
  readonly spendCap?: bigint | null;
  /** The call the hold is for: a hold released at its deadline still gets its call-log row. */
  readonly origin?: { readonly model: string; readonly endpoint: string; readonly requestId: string };
  /** The hold id may be asked for by other requests (an Idempotency-Key's run): a reservation the
   * log already has is someone else's, open or not, so `hold_exists`, never a retry of this one. */
  readonly exclusive?: boolean;
}

/** A call under an Idempotency-Key: its hold id comes from the key (see idempotent-call/decider.ts). */
export interface IdempotentReserve {
  readonly key: string;
  readonly fingerprint: string;
  readonly requestId: string;
  /** How long a run of the key counts (the spec's 7 days). */
  readonly retentionSeconds: number;
}

/** Why an idempotent call may not run, as the ledger sees it: the key names another request; its
 * run is still in flight (its hold is open); or its run was billed (its hold was settled) and the
 * answer must come from the `idempotency_keys` record, which did not have it. */
export type IdempotentRefusal = 'idempotency_key_reuse' | 'idempotency_in_flight' | 'idempotency_billed';

/**
 * The application side of the wallet and key aggregates: builds commands, runs them
 * through the deciders, and keeps the secret material in the key vault. Everything
 * that can refuse reads the aggregates here, never a projection.
 */
export class Ledger {
  readonly wallets: CommandHandler<WalletCommand, WalletState, WalletEvent>;
  readonly keys: CommandHandler<KeyCommand, KeyState, KeyEvent>;
  readonly idempotentCalls: CommandHandler<IdempotentCallCommand, IdempotentCallState, IdempotentCallEvent>;

  /** The aggregates whose streams are snapshotted, for the snapshot backfill (src/commands/snapshot/backfill.ts). */
  readonly snapshotted: readonly SnapshottedKind[];

  private readonly now: () => number;
  private readonly callsDurable: boolean;
  private readonly refusals: RefusalBudget;
  private readonly warn: NonNullable<LedgerOptions['warn']>;

  constructor(
    store: EventStore,
    private readonly vault: KeyVault,
    options: LedgerOptions = {},
  ) {
    this.now = options.now ?? unixNow;
    this.callsDurable = (options.callCommit ?? defaultCallCommit(store.engine)) === 'sync';
    this.warn = options.warn ?? ((fields, message) => console.warn(message, JSON.stringify(fields)));
    const snapshotting = (aggregate: string, version: number, initialState: unknown): Snapshotting | null =>
      options.snapshots
        ? {
            store: options.snapshots,
            version: stateVersion(aggregate, version, initialState),
            every: BigInt(options.snapshotEvery ?? SNAPSHOT_EVERY),
            onError: (error, streamId) => this.warn({ streamId, error: String(error) }, 'snapshot not used'),
          }
        : null;
    const walletSnapshots = snapshotting('wallet', WALLET_SNAPSHOT_VERSION, walletDecider.initialState);
    const keySnapshots = snapshotting('key', KEY_SNAPSHOT_VERSION, keyDecider.initialState);
    this.wallets = new CommandHandler(store, walletDecider, undefined, walletSnapshots);
    this.keys = new CommandHandler(store, keyDecider, undefined, keySnapshots);
    // Loaded through their handlers' lanes: a call that comes meanwhile waits for that fold, not for one of its own.
    this.snapshotted =
      walletSnapshots && keySnapshots
        ? [
            { prefix: walletStream(''), version: walletSnapshots.version, every: walletSnapshots.every, load: (streamId) => this.wallets.load(streamId).then(() => this.wallets.snapshotsSaved()) },
            { prefix: keyStream(''), version: keySnapshots.version, every: keySnapshots.every, load: (streamId) => this.keys.load(streamId).then(() => this.keys.snapshotsSaved()) },
          ]
        : [];
    this.idempotentCalls = new CommandHandler(store, idempotentCallDecider);
    this.refusals = new RefusalBudget(options.refusalsPerMinute !== undefined ? { perMinute: options.refusalsPerMinute } : {});
  }

  /** The wallet after every command queued before this read: real time. */
  async wallet(accountId: string): Promise<WalletState> {
    return (await this.wallets.load(walletStream(accountId))).state;
  }

  async key(keyId: string): Promise<KeyState> {
    return (await this.keys.load(keyStream(keyId))).state;
  }

  /** The key as authentication needs it: cached, at most KEY_STATE_MAX_AGE_MS behind the log. */
  async recentKey(keyId: string): Promise<KeyState> {
    return (await this.keys.recent(keyStream(keyId), KEY_STATE_MAX_AGE_MS)).state;
  }

  /** The key's cached state if it was checked against the log within KEY_STATE_MAX_AGE_MS, without
   * waiting (authentication's fast path); undefined when a read is due. */
  freshKey(keyId: string): KeyState | undefined {
    return this.keys.fresh(keyStream(keyId), KEY_STATE_MAX_AGE_MS)?.state;
  }

  /** The same for a wallet, within WALLET_STATE_MAX_AGE_MS. */
  freshWallet(accountId: string): WalletState | undefined {
    return this.wallets.fresh(walletStream(accountId), WALLET_STATE_MAX_AGE_MS)?.state;
  }

  /** The wallet as authentication needs it: cached, at most WALLET_STATE_MAX_AGE_MS behind the
   * log, so that a deactivation or new rate limits set through another instance apply here
   * within that time. Money decisions repeat on the aggregate (the reservation). */
  async recentWallet(accountId: string): Promise<WalletState> {
    return (await this.wallets.recent(walletStream(accountId), WALLET_STATE_MAX_AGE_MS)).state;
  }

  /** Resolves once every queued wallet and key command has been appended. */
  async idle(): Promise<void> {
    await Promise.all([this.wallets.idle(), this.keys.idle(), this.idempotentCalls.idle()]);
  }

  /** At shutdown, once the calls are done: a stream being folded from far back (the snapshot backfill's)
   * stops at its next page, so that idle() does not wait for a fold nobody needs any more. */
  stopLongReads(): void {
    for (const handler of [this.wallets, this.keys, this.idempotentCalls]) handler.stopLongReads();
  }

  private wallet$(accountId: string, command: WalletCommand, commandId?: string, actor?: string) {
    return this.wallets.handle(walletStream(accountId), command, { ...(commandId ? { commandId } : {}), ...(actor ? { metadata: { actor } } : {}) });
  }

  /** A command that meters a call: committed as LEDGER_CALL_COMMIT says; `deferred` when nobody waits for it. */
  private metered(accountId: string, command: WalletCommand, commandId: string, deferred = false, onDecided?: (state: WalletState) => void) {
    return this.wallets.handle(walletStream(accountId), command, {
      commandId,
      durable: this.callsDurable,
      deferrable: deferred,
      ...(onDecided ? { onDecided } : {}),
    });
  }

  private key$(keyId: string, command: KeyCommand, actor?: string) {
    return this.keys.handle(keyStream(keyId), command, actor ? { metadata: { actor } } : {});
  }

  /** `trialGrant`: granted with the opening (the admin API's: SIGNUP_GRANT), or null: none until grantTrial (a sign-up, once verified). */
  async openAccount(name: string, actor = 'admin', group: string | null = null, trialGrant: bigint | null = SIGNUP_GRANT, accountId = newAccountId()): Promise<Result<{ accountId: string; state: WalletState }>> {
    const handled = await this.wallet$(accountId, { type: 'OpenAccount', accountId, name, group, trialGrant, now: this.now() }, `open:${accountId}`, actor);
    return outcome(handled, (state) => ({ accountId, state }));
  }

  /** The trial credit, once per account: a repeat (or an account granted at its opening) grants nothing. */
  async grantTrial(accountId: string, amount: bigint, actor = 'system') {
    return outcome(await this.wallet$(accountId, { type: 'GrantTrialCredit', amount, now: this.now() }, undefined, actor), (state) => ({ state }));
  }

  /** Idempotent by `reference` within the account: a repeat with the same amount answers with the
   * first top-up's id and credits nothing; another amount is refused (topup_reference_conflict). */
  async topUp(accountId: string, amount: bigint, reference: string, topupId = randomUUID(), actor = 'admin') {
    const handled = await this.wallet$(accountId, { type: 'TopUp', topupId, amount, reference, now: this.now() }, `topup:${topupId}`, actor);
    return outcome(handled, (state) => ({ state, topupId: state.topups.get(reference)?.topupId ?? topupId }));
  }

  /** The payment provider took money back (a refund, a lost dispute): `total` is what `reference` has taken
   * in all; the debit is the part not taken yet, so a repeated or older notice takes nothing. */
  async debit(accountId: string, reference: string, total: bigint, reason: string, actor = 'payments') {
    const debitId = `${reference}@${total}`;
    const handled = await this.wallet$(accountId, { type: 'Debit', debitId, reference, total, reason, now: this.now() }, `debit:${debitId}`, actor);
    return outcome(handled, (state) => ({ state }));
  }

  async setLimits(accountId: string, rpm: number | null, concurrency: number | null, actor = 'admin') {
    return outcome(await this.wallet$(accountId, { type: 'SetLimits', rpm, concurrency, now: this.now() }, undefined, actor), (state) => ({ state }));
  }

  /** Binds the account to a channel group (null: unbinds it). */
  async setGroup(accountId: string, group: string | null, actor = 'admin') {
    return outcome(await this.wallet$(accountId, { type: 'SetGroup', group, now: this.now() }, undefined, actor), (state) => ({ state }));
  }

  async deactivate(accountId: string, reason: string, actor = 'admin') {
    return outcome(await this.wallet$(accountId, { type: 'Deactivate', reason, now: this.now() }, undefined, actor), (state) => ({ state }));
  }

  async reactivate(accountId: string, actor = 'admin') {
    return outcome(await this.wallet$(accountId, { type: 'Reactivate', now: this.now() }, undefined, actor), (state) => ({ state }));
  }

  async reserve(accountId: string, request: ReserveRequest): Promise<Result<{ state: WalletState }>> {
    return this.reserveEarly(accountId, request).committed;
  }

  /**
   * A reservation that may be known before it is committed. `decided` resolves as soon as the
   * hold is decided on this process's wallet state, provided that state can be trusted (no other
   * process wrote the wallet lately) and the wallet could afford the same hold once more after
   * this one: a concurrent spender elsewhere would have to take all of that headroom to turn the
   * decision over. Otherwise `decided` is the final result. `committed` is always the final result:
   * whatever needs the hold to exist (an answer, a settlement) waits for it.
   */
  reserveEarly(accountId: string, request: ReserveRequest): { decided: Promise<Result<{ state: WalletState }>>; committed: Promise<Result<{ state: WalletState }>> } {
    let decide!: (result: Result<{ state: WalletState }>) => void;
    let fail!: (error: unknown) => void;
    const decided = new Promise<Result<{ state: WalletState }>>((resolve, reject) => {
      decide = resolve;
      fail = reject;
    });
    const committed = (async () => {
      let spendCap: bigint | null = request.spendCap ?? null;
      if (request.spendCap === undefined && request.keyId !== null) spendCap = (await this.key(request.keyId)).settings.spend_cap;
      const now = this.now();
      const command: WalletCommand = {
        type: 'Reserve',
        holdId: request.holdId,
        amount: request.amount,
        keyId: request.keyId,
        spendCap,
        purpose: request.purpose,
        expiresAt: now + request.ttlSeconds,
        ...(request.origin ? { origin: { ...request.origin } } : {}),
        now,
      };
      const again = { ...command, holdId: `${request.holdId}#again` };
      const handled = await this.metered(accountId, command, `reserve:${request.holdId}`, false, (state) => {
        if (walletDecider.decide(again, state).ok) decide({ ok: true, position: null, state });
      });
      // The log already has this reservation (its event id) but the hold is not open: the id was
      // used and closed before, longer ago than the wallet remembers closed holds. A hold ends once.
      if (handled.ok && handled.duplicate && (request.exclusive === true || !handled.state.holds.has(request.holdId)))
        return { ok: false, error: { code: 'hold_exists', message: `hold ${request.holdId} already exists` } } as const;
      return outcome(handled, (state) => ({ state }));
    })();
    // The first word wins (a settled promise ignores the later one): an early decision, or the final result.
    committed.then(decide, fail);
    // A caller that only wants the final result need not listen to `decided` as well.
    decided.catch(() => {});
    return { decided, committed };
  }

  /**
   * The hold of a call under an Idempotency-Key. The key's run (idempotent-call stream) names the
   * hold; reserving it tells the rest: a new hold runs the call; `hold_exists` means the run was
   * reserved before, so it is in flight (the hold is open) or billed (closed: a released hold would
   * have freed the key for a new run). Whatever the `idempotency_keys` table says, a run is billed
   * at most once: the wallet refuses its hold id a second time, from its state or from the log.
   */
  async reserveIdempotent(
    accountId: string,
    request: Omit<ReserveRequest, 'holdId'>,
    idempotency: IdempotentReserve,
  ): Promise<Result<{ state: WalletState; holdId: string }> | { ok: false; error: { code: IdempotentRefusal; message: string; requestId: string } }> {
    const digest = idempotencyDigest(accountId, idempotency.key);
    const command = {
      type: 'Start' as const,
      accountId,
      digest,
      fingerprint: idempotency.fingerprint,
      requestId: idempotency.requestId,
      retentionSeconds: idempotency.retentionSeconds,
      now: this.now(),
    };
    const started = await this.idempotentCalls.handle(idempotentCallStream(digest), command, { durable: this.callsDurable });
    if (!started.ok) return { ok: false, error: { code: 'idempotency_key_reuse', message: started.error.message, requestId: '' } };
    const run = started.state.last!;
    const reserved = await this.reserve(accountId, { ...request, holdId: run.holdId, exclusive: true });
    if (reserved.ok) return { ...reserved, holdId: run.holdId };
    if (reserved.error.code !== 'hold_exists') return reserved;
    const open = (await this.wallet(accountId)).holds.has(run.holdId);
    return {
      ok: false,
      error: open
        ? { code: 'idempotency_in_flight', message: `the run of this key (request ${run.requestId}) is still in flight`, requestId: run.requestId }
        : { code: 'idempotency_billed', message: `the run of this key (request ${run.requestId}) was billed`, requestId: run.requestId },
    };
  }

  /** `deferrable`: the caller does not wait for the result (the answer has gone out);
   * the settlement is queued at once, so every later read or command of the wallet sees it. */
  async settle(accountId: string, holdId: string, amount: bigint, call?: CallRecord, deferrable = false, uncharged = 0n) {
    const command = { type: 'Settle' as const, holdId, amount, ...(call ? { call } : {}), ...(uncharged > 0n ? { uncharged } : {}), now: this.now() };
    return outcome(await this.metered(accountId, command, `settle:${holdId}`, deferrable), (state) => ({ state }));
  }

  async release(accountId: string, holdId: string, reason: string, call?: CallRecord) {
    const command = { type: 'Release' as const, holdId, reason, ...(call ? { call } : {}), now: this.now() };
    const handled = await this.metered(accountId, command, `release:${holdId}`);
    // A released run of an Idempotency-Key billed nothing: the key may run again. Recorded after
    // the release, never before: a crash in between leaves the key looking billed (the client is
    // told to use a new key), never a billed run looking free (which would bill it twice).
    const digest = handled.ok ? digestOfHold(holdId) : null;
    if (digest !== null) {
      await this.idempotentCalls
        .handle(idempotentCallStream(digest), { type: 'Release', holdId, now: this.now() }, { commandId: `run-released:${holdId}`, durable: this.callsDurable })
        .catch((error: unknown) => this.warn({ err: String(error), holdId }, 'released an idempotent hold but could not record it: its key stays occupied'));
    }
    return outcome(handled, (state) => ({ state }));
  }

  /** Whether a refusal of the account would get its row now (`recordRejected` within the budget). */
  recordsRejected(accountId: string): boolean {
    return this.refusals.wouldRecord(accountId, performance.now());
  }

  /** A call refused before it could hold money still gets its call-log row (cost 0), within the
   * account's budget of recorded refusals (`recorded: false` past it). */
  async recordRejected(accountId: string, call: CallRecord, deferrable = false): Promise<Result<{ recorded: boolean }>> {
    const budget = this.refusals.take(accountId, performance.now());
    if (!budget.record) {
      if (budget.report > 0)
        this.warn(
          { accountId, unrecorded: budget.report },
          'refused calls of this account past the recording budget (see docs/operations.md): counted here, no call-log rows',
        );
      return { ok: true, position: null, recorded: false };
    }
    return outcome(
      await this.metered(accountId, { type: 'RecordRejectedCall', call, now: this.now() }, `rejected:${call.request_id}`, deferrable),
      () => ({ recorded: true }),
    );
  }

  /**
   * Corrects past charges of an account (a re-rate), idempotent on `reference`: the same reference
   * a second time changes nothing and says so (`alreadyApplied`), whatever its calls.
   */
  async adjust(
    accountId: string,
    adjustment: { reference: string; reason: string; model: string; calls: readonly AdjustmentCall[] },
    actor = 'admin',
  ): Promise<Result<{ state: WalletState; alreadyApplied: boolean }>> {
    const adjustmentId = `adj_${createHash('sha256').update(adjustment.reference).digest('hex').slice(0, 24)}`;
    const handled = await this.wallet$(
      accountId,
      { type: 'Adjust', adjustmentId, ...adjustment, now: this.now() },
      `adjust:${accountId}:${adjustment.reference}`,
      actor,
    );
    if (!handled.ok && handled.error.code === 'adjustment_exists') {
      const state = await this.wallet(accountId);
      return { ok: true, position: null, state, alreadyApplied: true };
    }
    return outcome(handled, (state) => ({ state, alreadyApplied: handled.ok && handled.duplicate }));
  }

  /** `agent`: an agent key of the enterprise `accountId` (see src/commands/enterprise/service.ts);
   * `keyId`: the id to use (an approval derives it from its request, so a retry finds its key). */
  async issueKey(
    accountId: string,
    settings: KeySettings,
    actor = 'admin',
    options: { agent?: { agentId: string; issuedBy: string; requestId: string | null }; keyId?: string } = {},
  ): Promise<Result<{ keyId: string; raw: string; state: KeyState }>> {
    const wallet = await this.wallet(accountId);
    if (wallet.status === 'none') return { ok: false, error: { code: 'account_not_found', message: 'account not found' } };
    const keyId = options.keyId ?? `key_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
    const generated = generateApiKey();
    // The ciphertext is written first: a key that exists in the log can always be revealed.
    await this.vault.store(keyId, generated.raw);
    const handled = await this.key$(
      keyId,
      {
        type: 'IssueKey',
        keyId,
        accountId,
        prefix: generated.prefix,
        hash: generated.hash,
        revealable: true,
        settings,
        ...(options.agent ? { agent: options.agent } : {}),
        now: this.now(),
      },
      actor,
    );
    if (!handled.ok) await this.vault.destroy(keyId);
    return outcome(handled, (state) => ({ keyId, raw: generated.raw, state }));
  }

  async updateKey(keyId: string, changes: Partial<KeySettings>, actor = 'admin') {
    return outcome(await this.key$(keyId, { type: 'UpdateKey', changes, now: this.now() }, actor), (state) => ({ state }));
  }

  async revokeKey(keyId: string, reason: string, actor = 'admin'): Promise<Result<{ state: KeyState }>> {
    const handled = await this.key$(keyId, { type: 'RevokeKey', reason, now: this.now() }, actor);
    if (!handled.ok) return { ok: false, error: handled.error };
    return this.afterKeyClosed(handled.state, handled.position, actor);
  }

  async deleteKey(keyId: string, actor = 'admin'): Promise<Result<{ state: KeyState }>> {
    const handled = await this.key$(keyId, { type: 'DeleteKey', now: this.now() }, actor);
    if (handled.ok) await this.vault.destroy(keyId);
    if (!handled.ok) return { ok: false, error: handled.error };
    return this.afterKeyClosed(handled.state, handled.position, actor);
  }

  /**
   * An escrow key revoked or deleted: what is left of its escrow returns to the enterprise's
   * available balance. After the key's event, never before: a crash in between leaves the escrow
   * set aside for a key that cannot spend it, and the revocation (or deletion) repeated returns it.
   */
  private async afterKeyClosed(key: KeyState, position: Position | null, actor: string): Promise<Result<{ state: KeyState }>> {
    if (key.requestId === null) return { ok: true, position, state: key };
    const returned = await this.wallet$(key.accountId, { type: 'ReturnEscrow', keyId: key.keyId, now: this.now() }, `escrow-return:${key.keyId}`, actor);
    if (!returned.ok && returned.error.code !== 'escrow_not_found') return { ok: false, error: returned.error };
    const last = returned.ok && returned.position !== null ? returned.position : position;
    return { ok: true, position: last, state: key };
  }

  /** Gives back what is left of a key's escrow (escrow_not_found when it has none). */
  async returnEscrow(accountId: string, keyId: string, actor = 'admin') {
    const handled = await this.wallet$(accountId, { type: 'ReturnEscrow', keyId, now: this.now() }, `escrow-return:${keyId}`, actor);
    return outcome(handled, (state) => ({ state }));
  }

  /** Sets an approved key's cap aside from the enterprise's available balance (insufficient_funds
   * when it is not there); the same request again changes nothing. */
  async fundEscrow(accountId: string, keyId: string, amount: bigint, requestId: string, actor = 'admin') {
    const handled = await this.wallet$(accountId, { type: 'FundEscrow', keyId, amount, requestId, now: this.now() }, `escrow:${requestId}`, actor);
    return outcome(handled, (state) => ({ state }));
  }

  /** Returns the raw key and records the reveal as an audit event. */
  async revealKey(keyId: string, actor = 'admin'): Promise<Result<{ raw: string; state: KeyState }>> {
    const handled = await this.key$(keyId, { type: 'RevealKey', actor, now: this.now() }, actor);
    if (!handled.ok) return { ok: false, error: handled.error };
    const raw = await this.vault.reveal(keyId);
    if (raw === null) return { ok: false, error: { code: 'key_not_revealable', message: 'the key material is not available' } };
    return { ok: true, position: handled.position, raw, state: handled.state };
  }
}
