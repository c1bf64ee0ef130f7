import { GatewayError } from '../../errors';

// The disk the multipart upload spool (DATA_DIR/uploads, image-uploads.ts) may take, counted as bytes are
// written and given back when their file is deleted (issue 31, item 4): concurrent 95 MB edits, from one
// tenant or many, cannot fill DATA_DIR (the embedded database, the secrets and hosted media live there too).

/** Seconds a client refused for a full spool is told to wait: uploads in flight end within minutes. */
export const SPOOL_FULL_RETRY_AFTER_S = 10;

/**
 * The process's budget for spooled upload bytes: `limit` in all, and at most half of it for one account
 * (so one tenant's uploads always leave room for the others'). Synchronous, so two requests can never
 * take the same bytes. Each process counts its own files: instances sharing a DATA_DIR each have theirs.
 */
export class UploadBudget {
  private used = 0;
  private readonly byAccount = new Map<string, number>();
  readonly accountLimit: number;

  constructor(readonly limit: number) {
    this.accountLimit = Math.floor(limit / 2);
  }

  /** Takes `bytes` for `account`, or refuses with the 503 its client gets; nothing is taken then. */
  reserve(account: string, bytes: number): GatewayError | null {
    const own = this.byAccount.get(account) ?? 0;
    if (own + bytes > this.accountLimit) return spoolFull(`this account's uploads in progress would pass its share of the gateway's upload space (${mb(this.accountLimit)})`);
    if (this.used + bytes > this.limit) return spoolFull(`the gateway's upload space (${mb(this.limit)}) is taken by uploads in progress`);
    this.used += bytes;
    this.byAccount.set(account, own + bytes);
    return null;
  }

  /** Gives back bytes taken by `reserve` (their file is deleted). */
  release(account: string, bytes: number): void {
    if (bytes <= 0) return;
    this.used = Math.max(0, this.used - bytes);
    const left = (this.byAccount.get(account) ?? 0) - bytes;
    if (left > 0) this.byAccount.set(account, left);
    else this.byAccount.delete(account);
  }

  /** Bytes taken, in all and by one account. */
  held(account?: string): number {
    return account === undefined ? this.used : (this.byAccount.get(account) ?? 0);
  }
}

const mb = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;

function spoolFull(why: string): GatewayError {
  return new GatewayError('service_unavailable', `The upload was refused: ${why}. Retry in a few seconds.`, { 'retry-after': String(SPOOL_FULL_RETRY_AFTER_S) });
}
