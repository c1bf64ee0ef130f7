/**
 * Builds one account with a long history, fast: the account, its top-up and its key go through the
 * ledger as the admin API would; then `--events` events (pairs of FundsReserved + HoldSettled, each
 * settlement with its call record, as a chat call leaves them) are appended straight to the wallet's
 * stream in large appends. Prints the account id and the raw key (JSON) on stdout.
 *
 *   DATABASE_URL=postgres://… node --import tsx bench/ledger-scale/seed.ts --events 1000000
 *
 * Without DATABASE_URL it writes to DATA_DIR's embedded database (the gateway must not be running).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Ledger } from '../../src/commands/ledger';
import { walletStream } from '../../src/events/catalog/wallet';
import { schemaVersion } from '../../src/events/catalog';
import type { NewEvent } from '../../src/events/store/port';
import { settingsFromEnv } from '../../src/runtime/settings';
import { openStorage } from '../../src/runtime/storage';
import { KeyCipher } from '../../src/secrets/api-key';
import { KeyVault } from '../../src/secrets/key-vault';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    append: { type: 'string', default: '2000' },
    model: { type: 'string', default: 'chat-model' },
    accounts: { type: 'string', default: '1' },
  },
});
const total = Number(values.events);
const perAppend = Number(values.append);
const accountCount = Number(values.accounts);

const storage = await openStorage(settingsFromEnv(process.env));
// The vault's copy of the key is only for reveal, which this benchmark does not use.
const ledger = new Ledger(storage.store, new KeyVault(storage.sql, new KeyCipher(randomBytes(32).toString('hex'))));
interface Seeded {
  accountId: string;
  keyId: string;
  key: string;
  stream: string;
  revision: bigint;
}
const seeded: Seeded[] = [];
for (let i = 0; i < accountCount; i++) {
  const opened = await ledger.openAccount(accountCount === 1 ? 'ledger-scale' : `ledger-scale ${i}`);
  if (!opened.ok) throw new Error(opened.error.message);
  const accountId = opened.accountId;
  // Enough for every call below (each costs 1,000 nano-USD) and the calls the benchmark makes after.
  const topped = await ledger.topUp(accountId, 10_000_000_000_000n, 'ledger-scale');
  if (!topped.ok) throw new Error(topped.error.message);
  const issued = await ledger.issueKey(accountId, { name: 'ledger-scale', allowed_models: null, expires_at: null, enabled: true, spend_cap: null });
  if (!issued.ok) throw new Error(issued.error.message);
  await ledger.idle();
  const stream = walletStream(accountId);
  const revision = (await storage.store.readStream(stream, { direction: 'backwards', maxCount: 1 }))[0]!.revision;
  seeded.push({ accountId, keyId: issued.keyId, key: issued.raw, stream, revision });
}

const at = Math.floor(Date.now() / 1000);
const event = (type: string, data: unknown): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { command_id: randomUUID(), schema_version: schemaVersion(type) },
});
const started = performance.now();
let written = 0;
let call = 0;
for (let turn = 0; written < total; turn++) {
  // With several accounts, each append goes to the next one: their events interleave in the log.
  const account = seeded[turn % seeded.length]!;
  const batch: NewEvent[] = [];
  while (batch.length < perAppend && written + batch.length < total) {
    call += 1;
    const holdId = `hold_seed_${call}`;
    const requestId = `req_seed_${call}`;
    batch.push(
      event('FundsReserved', { hold_id: holdId, amount: '5000', key_id: account.keyId, purpose: 'chat', expires_at: at + 600, at, model: values.model, endpoint: 'chat-completions', request_id: requestId }),
      event('HoldSettled', {
        hold_id: holdId,
        hold_amount: '5000',
        captured: '1000',
        released: '4000',
        at,
        call: {
          request_id: requestId, key_id: account.keyId, model: values.model, endpoint: 'chat-completions', status: 'success',
          error_code: null, error_message: null, input_tokens: 12, output_tokens: 16, cached_tokens: 0, unit_count: null,
          unit_type: null, latency_ms: 3, attempts_count: 1, channel_id: 'sim', task_id: null, submitted_at: at,
          result_urls: [], result_expires_at: null,
        },
      }),
    );
  }
  const appended = await storage.store.append(account.stream, batch, account.revision);
  account.revision = appended.nextRevision;
  written += batch.length;
  if (written % (perAppend * 50) === 0) process.stderr.write(`${written} events, ${Math.round((written * 1000) / (performance.now() - started))}/s\n`);
}
process.stderr.write(`appended ${written} events in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
const [first] = seeded;
process.stdout.write(`${JSON.stringify({ accountId: first!.accountId, keyId: first!.keyId, key: first!.key, accounts: seeded.length, events: written })}\n`);
await storage.close();
