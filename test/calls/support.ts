import { expect } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { CSV_COLUMNS } from '../../src/projections/call-log/queries';
import type { Simulator } from '../../src/simulator';
import { chatConfig } from '../chat/support';
import { imagesConfig } from '../media/support';
import type { SimulatedGateway } from '../support/gateway';

/** One model per chat protocol (test/chat) and the image SKUs on their channels (test/media). */
export function callsConfig(sim: Simulator): GatewayConfig {
  const chat = chatConfig(sim);
  const images = imagesConfig(sim);
  return {
    models: [...chat.models.filter((m) => m.id !== 'img-model'), ...images.models.filter((m) => m.kind === 'image')],
    channels: [...chat.channels, ...images.channels.filter((c) => c.protocol === 'images')],
  };
}

export interface LogRow {
  readonly status: string;
  readonly error_code: string | null;
  readonly model: string;
  readonly cost_usd: string;
  readonly request_id: string;
  readonly key_prefix: string | null;
  readonly unit_type: string | null;
}

/**
 * The account's call log as the operator sees it (admin JSON), checked against the other two
 * views of the same rows: the CSV export has one line per row, and the account's usage totals
 * (read with `key`) count every row once, by status.
 */
export async function callLog(h: SimulatedGateway, accountId: string, key: string): Promise<LogRow[]> {
  await h.t.gateway.ledger.idle();
  await h.t.gateway.runner.catchUpToHead();
  const rows = ((await h.t.admin('GET', `/accounts/${accountId}/logs?limit=1000`)).json() as { data: LogRow[] }).data;
  const csv = (await h.t.admin('GET', `/accounts/${accountId}/logs.csv`)).body.trim().split('\n');
  expect(csv[0]).toBe(CSV_COLUMNS.join(','));
  expect(csv.length - 1, 'CSV lines').toBe(rows.length);
  const usage = (await (await fetch(`${h.baseUrl}/api/v1/usage`, { headers: { 'x-api-key': key } })).json()) as Record<string, number | string>;
  expect(usage.total_requests, 'usage total_requests').toBe(rows.length);
  for (const status of ['success', 'error', 'interrupted', 'rejected'])
    expect(usage[`${status}_requests`], `usage ${status}_requests`).toBe(rows.filter((r) => r.status === status).length);
  const cost = rows.reduce((sum, r) => sum + parseUsd(r.cost_usd), 0n);
  expect(parseUsd(String(usage.cost_usd)), 'usage cost').toBe(cost);
  return rows;
}

/** Rows as sortable `status code model` lines, for comparing multisets. */
export const summary = (rows: readonly Pick<LogRow, 'status' | 'error_code' | 'model'>[]) =>
  rows.map((r) => `${r.status} ${r.error_code ?? '-'} ${r.model}`).sort();
