import { randomUUID } from 'node:crypto';
import type { Sql } from '../storage/sql';
import { DEFAULT_POLICY, decideClaim, type IdempotencyPolicy, type IdempotencyRefusal, type KeyRecord } from './decider';

export const IDEMPOTENCY_SCHEMA = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  account_id text NOT NULL,
  idem_key text NOT NULL,
  fingerprint text NOT NULL,
  claim_token text NOT NULL,
  state text NOT NULL CHECK (state IN ('in_flight', 'succeeded', 'not_cached')),
  status_code integer,
  content_type text,
  body bytea,
  created_at bigint NOT NULL,
  lease_until bigint,
  PRIMARY KEY (account_id, idem_key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);
CREATE INDEX IF NOT EXISTS idempotency_keys_lease ON idempotency_keys (lease_until) WHERE state = 'in_flight';`;

/** 4 MiB: above this a 2xx is remembered as "succeeded, not cached" (b64_json images). */
export const DEFAULT_MAX_STORED_BYTES = 4 * 1024 * 1024;

export interface IdempotencyStoreOptions {
  /** Unix seconds. */
  readonly now?: () => number;
  readonly policy?: Partial<IdempotencyPolicy>;
  readonly maxStoredBytes?: number;
}

/** A key this request holds: the token proves it is still this request's claim. */
export interface Claim {
  readonly accountId: string;
  readonly key: string;
  readonly fingerprint: string;
  readonly token: string;
}

export interface StoredResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: Buffer;
}

export type ClaimResult =
  | { readonly kind: 'proceed'; readonly claim: Claim; readonly tookOver?: 'retention_passed' | 'lease_expired' }
  | { readonly kind: 'replay'; readonly response: StoredResponse }
  | { readonly kind: 'refused'; readonly code: IdempotencyRefusal };

/** `body: null`: a success whose bytes could not be captured (a stream); kept like a too-large one. */
export interface Completion {
  readonly status: number;
  readonly contentType: string;
  readonly body: string | Uint8Array | null;
  /** The most this answer may take to be kept, when its route allows more than the store's default
   * (an audio answer must replay: the spec lets only b64_json images go unreplayed). */
  readonly maxStoredBytes?: number;
}

/** stored: replayable; not_cached: remembered as succeeded without bytes; released: key free
 * again (non-2xx); lost: the claim was no longer this request's (lease expired and taken over). */
export type CompleteOutcome = 'stored' | 'not_cached' | 'released' | 'lost';

interface Row {
  fingerprint: string;
  claim_token: string;
  state: KeyRecord['state'];
  status_code: number | null;
  content_type: string | null;
  created_at: string | number;
  lease_until: string | number | null;
}

// A claim whose row changes between our read and our write re-reads; a handful of rounds
// is plenty, since each lost round means another claimer made progress.
const MAX_ROUNDS = 8;

/**
 * Idempotency keys in one table shared by every gateway instance. Claims are atomic in
 * the database, never in process memory: the insert of a new key, and the take-over of a
 * stale one (conditional on the exact row that was judged stale), each succeed for
 * exactly one of any number of concurrent claimers.
 */
export class IdempotencyStore {
  private readonly now: () => number;
  readonly policy: IdempotencyPolicy;
  readonly maxStoredBytes: number;

  constructor(
    private readonly sql: Sql,
    options: IdempotencyStoreOptions = {},
  ) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
    this.policy = { ...DEFAULT_POLICY, ...options.policy };
    this.maxStoredBytes = options.maxStoredBytes ?? DEFAULT_MAX_STORED_BYTES;
  }

  async migrate(): Promise<void> {
    await this.sql.exec(IDEMPOTENCY_SCHEMA);
  }

  async claim(accountId: string, key: string, fingerprint: string): Promise<ClaimResult> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const now = this.now();
      const token = randomUUID();
      const inserted = await this.sql.query(
        `INSERT INTO idempotency_keys (account_id, idem_key, fingerprint, claim_token, state, created_at, lease_until)
         VALUES ($1, $2, $3, $4, 'in_flight', $5, $6)
         ON CONFLICT (account_id, idem_key) DO NOTHING RETURNING claim_token`,
        [accountId, key, fingerprint, token, now, now + this.policy.leaseSeconds],
      );
      if (inserted.length === 1) return { kind: 'proceed', claim: { accountId, key, fingerprint, token } };

      const [row] = await this.sql.query<Row>(
        `SELECT fingerprint, claim_token, state, status_code, content_type, created_at, lease_until
         FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2`,
        [accountId, key],
      );
      if (!row) continue; // released or purged between the two statements: insert again
      const decision = decideClaim(recordOf(row), fingerprint, now, this.policy);
      switch (decision.kind) {
        case 'refuse':
          return { kind: 'refused', code: decision.code };
        case 'replay': {
          const [stored] = await this.sql.query<{ body: Uint8Array | null }>(
            `SELECT body FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2 AND claim_token = $3 AND state = 'succeeded'`,
            [accountId, key, row.claim_token],
          );
          if (!stored) continue;
          return {
            kind: 'replay',
            response: { status: Number(row.status_code), contentType: row.content_type ?? '', body: toBuffer(stored.body) },
          };
        }
        case 'take_over': {
          // Conditional on the row we judged: same claim (token) in the same state. If another
          // claimer took it over or its owner completed it meanwhile, nothing matches and we
          // judge the new row instead.
          const taken = await this.sql.query(
            `UPDATE idempotency_keys
             SET fingerprint = $3, claim_token = $4, state = 'in_flight', status_code = NULL, content_type = NULL,
                 body = NULL, created_at = $5, lease_until = $6
             WHERE account_id = $1 AND idem_key = $2 AND claim_token = $7 AND state = $8
             RETURNING claim_token`,
            [accountId, key, fingerprint, token, now, now + this.policy.leaseSeconds, row.claim_token, row.state],
          );
          if (taken.length === 1) return { kind: 'proceed', claim: { accountId, key, fingerprint, token }, tookOver: decision.reason };
          continue;
        }
        case 'proceed':
          continue; // not reached with a row; kept for exhaustiveness
      }
    }
    // Constant churn on one key (claims released as fast as they are made): tell the client to retry.
    return { kind: 'refused', code: 'idempotency_in_flight' };
  }

  /** Records the outcome of a claimed request: 2xx kept (or marked not cached when too large
   * or not captured), anything else frees the key at once (spec: only 2xx are remembered). */
  async complete(claim: Claim, response: Completion): Promise<CompleteOutcome> {
    if (response.status < 200 || response.status > 299) return (await this.abandon(claim)) ? 'released' : 'lost';
    const body = response.body === null ? null : typeof response.body === 'string' ? Buffer.from(response.body, 'utf8') : toBuffer(response.body);
    const keep = body !== null && body.byteLength <= Math.max(this.maxStoredBytes, response.maxStoredBytes ?? 0);
    const rows = await this.sql.query(
      `UPDATE idempotency_keys
       SET state = $4, status_code = $5, content_type = $6, body = $7, lease_until = NULL
       WHERE account_id = $1 AND idem_key = $2 AND claim_token = $3 AND state = 'in_flight'
       RETURNING claim_token`,
      [claim.accountId, claim.key, claim.token, keep ? 'succeeded' : 'not_cached', response.status, response.contentType, keep ? body : null],
    );
    if (rows.length === 0) return 'lost';
    return keep ? 'stored' : 'not_cached';
  }

  /** Frees the key if this request still holds it; true when it did. */
  async abandon(claim: Claim): Promise<boolean> {
    const rows = await this.sql.query(
      `DELETE FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2 AND claim_token = $3 AND state = 'in_flight'
       RETURNING claim_token`,
      [claim.accountId, claim.key, claim.token],
    );
    return rows.length === 1;
  }

  /**
   * Deletes keys past retention and claims past their lease, at most `limit` of each per
   * call (both by index). Not needed for correctness (a claim judges such rows stale by
   * itself); it keeps the table small. The condition is repeated outside the sub-select so
   * a row taken over meanwhile is re-checked and spared.
   */
  async purge(limit = 1000): Promise<number> {
    const now = this.now();
    const oldest = now - this.policy.retentionSeconds;
    const expired = await this.sql.query(
      `DELETE FROM idempotency_keys WHERE created_at <= $1 AND (account_id, idem_key) IN (
         SELECT account_id, idem_key FROM idempotency_keys WHERE created_at <= $1 LIMIT $2)
       RETURNING 1`,
      [oldest, limit],
    );
    const abandoned = await this.sql.query(
      `DELETE FROM idempotency_keys WHERE state = 'in_flight' AND lease_until <= $1 AND (account_id, idem_key) IN (
         SELECT account_id, idem_key FROM idempotency_keys WHERE state = 'in_flight' AND lease_until <= $1 LIMIT $2)
       RETURNING 1`,
      [now, limit],
    );
    return expired.length + abandoned.length;
  }
}

function recordOf(row: Row): KeyRecord {
  const createdAt = Number(row.created_at);
  if (row.state === 'in_flight') return { state: 'in_flight', fingerprint: row.fingerprint, createdAt, leaseUntil: Number(row.lease_until) };
  return { state: row.state, fingerprint: row.fingerprint, createdAt };
}

// pg returns bytea as a Buffer, PGlite as a Uint8Array.
function toBuffer(bytes: Uint8Array | null): Buffer {
  if (bytes === null) return Buffer.alloc(0);
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
