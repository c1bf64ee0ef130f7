import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../config/schema';
import type { LogRow } from '../projections/call-log/queries';
import { holderErrorText } from './call-errors';
import { yTicks } from './chart';
import { html, usd } from './html';
import { fromOwnOrigin } from './origin';
import { callPage } from './pages';
import { receiptOf } from './receipt';
import { SignInLimit } from './sign-in-limit';
import { isTimeZone, startOfDay } from './zone';

const model = (price: ModelConfig['price'], extra: Partial<ModelConfig> = {}) => ({ id: 'm', owned_by: 'x', kind: 'text', price, ...extra }) as ModelConfig;

const row = (fields: Partial<LogRow>): LogRow => ({
  id: '00000000-0000-0000-0000-000000000000',
  created_at: 1_700_000_000,
  key_id: null,
  key_name: null,
  key_prefix: null,
  model: 'm',
  status: 'success',
  error_code: null,
  error_message: null,
  input_tokens: 0,
  output_tokens: 0,
  cached_tokens: 0,
  cache_write_tokens: 0,
  cache_write_1h_tokens: 0,
  unit_count: null,
  unit_type: null,
  cost_usd: '0.00',
  latency_ms: 1,
  request_id: 'req_1',
  task_id: null,
  submitted_at: 1_700_000_000,
  attempts_count: 1,
  result_urls: [],
  result_expires_at: null,
  adjustment_usd: '0.00',
  adjustment_reference: null,
  tool_fee_usd: null,
  requested_model: null,
  agent_id: null,
  ...fields,
});

describe('the receipt of a call', () => {
  it('shows each token class at its price per million, exactly, and the one rounding up', () => {
    // 1001 × $0.15/1M = $0.00015015; 7 cached × $0.0751/1M = $0.0000005257; 333 × $0.6/1M = $0.0001998
    const receipt = receiptOf(model({ input: '0.15', cached_input: '0.0751', output: '0.6' }), row({ input_tokens: 1008, cached_tokens: 7, output_tokens: 333, cost_usd: '0.000350476' }), []);
    expect(receipt.lines.map((l) => [l.label, l.quantity, l.amount])).toEqual([
      ['Input', '1001 tokens', '$0.00015015'],
      ['Cached input', '7 tokens', '$0.0000005257'],
      ['Output', '333 tokens', '$0.0001998'],
    ]);
    // $0.0003504757 rounded up to the nano-dollar
    expect(receipt.computed).toBe('0.000350476');
    expect(receipt.matches).toBe(true);
    expect(receipt.note).toBeNull();
  });

  it('says so when the ledger captured another amount than today’s price list gives', () => {
    const receipt = receiptOf(model({ input: '1', output: '2' }), row({ input_tokens: 10, output_tokens: 10, cost_usd: '0.00004', adjustment_usd: '-0.00001' }), []);
    expect(receipt.computed).toBe('0.00003');
    expect(receipt.charged).toBe('0.00003');
    expect(receipt.matches).toBe(true);
    const changed = receiptOf(model({ input: '2', output: '2' }), row({ input_tokens: 10, output_tokens: 10, cost_usd: '0.00003' }), []);
    expect(changed.matches).toBe(false);
    expect(changed.note).toMatch(/ledger is what counts/);
  });

  it('names the discount and long-context multipliers it applied', () => {
    const receipt = receiptOf(
      model({ input: '1', output: '1' }, { long_context: { threshold_tokens: 100, multiplier: '2' }, discount: { multiplier: '0.5' } } as Partial<ModelConfig>),
      row({ input_tokens: 100, output_tokens: 0, cost_usd: '0.0001' }),
      [],
    );
    expect(receipt.multipliers).toEqual(['long context (≥ 100 input tokens) × 2.00', 'discount × 0.5']);
    expect(receipt.computed).toBe('0.0001');
  });

  it('shows 5-minute and 1-hour cache writes at their own prices, and matches what the ledger captured', () => {
    const sonnet = model({ input: '3', cached_input: '0.30', output: '15' }, { cache_write_multiplier: '1.25' });
    // Anthropic's usage: 2095 input, 10000 read, 1024 written for 5 minutes, 5328 for 1 hour, 503 output.
    const written = row({ input_tokens: 18_447, cached_tokens: 10_000, cache_write_tokens: 6352, cache_write_1h_tokens: 5328, output_tokens: 503, cost_usd: '0.052638' });
    const receipt = receiptOf(sonnet, written, []);
    expect(receipt.lines.map((l) => [l.label, l.quantity, l.price, l.amount])).toEqual([
      ['Input', '2095 tokens', '$3.00 / 1M', '$0.006285'],
      ['Cached input', '10000 tokens', '$0.30 / 1M', '$0.003'],
      ['Cache writes (5 minutes)', '1024 tokens', '$3.75 / 1M (input × 1.25)', '$0.00384'],
      ['Cache writes (1 hour)', '5328 tokens', '$6.00 / 1M (input × 2)', '$0.031968'],
      ['Output', '503 tokens', '$15.00 / 1M', '$0.007545'],
    ]);
    expect(receipt.computed).toBe('0.052638');
    expect(receipt.matches).toBe(true);
    // The call page says how much of the prompt was written, and for how long.
    expect(callPage(written, [], receipt).text).toContain('18447 in (10000 cached, 6352 written to the cache: 1024 for 5 minutes, 5328 for 1 hour), 503 out');
    // A write price below the nano-dollar is written exactly: $0.0021 × 1.25 = $0.002625 / 1M; 3 tokens: $0.000000007875.
    const tiny = receiptOf(model({ input: '0.0021', output: '1' }, { cache_write_multiplier: '1.25' }), row({ input_tokens: 3, cache_write_tokens: 3, cost_usd: '0.000000008' }), []);
    expect(tiny.lines[1]).toEqual({ label: 'Cache writes (5 minutes)', quantity: '3 tokens', price: '$0.002625 / 1M (input × 1.25)', amount: '$0.000000007875' });
    expect(tiny.matches).toBe(true);
  });

  it('charges a rejected call nothing and explains per-image prices', () => {
    expect(receiptOf(model({ input: '1' }), row({ status: 'rejected' }), [])).toMatchObject({ computed: '0.00', lines: [] });
    const image = receiptOf(model({ per_image: '0.04' }, { kind: 'image' }), row({ unit_count: 3, unit_type: 'image', cost_usd: '0.12' }), []);
    expect(image.lines).toEqual([{ label: 'image', quantity: '3', price: '$0.04 each', amount: '$0.12' }]);
    expect(image.matches).toBe(true);
  });
});

describe('console HTML', () => {
  it('escapes every interpolated text, keeps Html as it is', () => {
    const name = `<script>alert("x")</script>&'`;
    expect(html`<p title="${name}">${name}${usd('1.50')}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;<span class="usd">$1.50</span></p>',
    );
    expect(html`${[1, null, undefined, false, 'a']}`.text).toBe('1a');
  });
});

describe('sign-in attempts', () => {
  it('admits 10 per address per window, then says how long to wait; other addresses and the next window are free', () => {
    let now = 1000;
    const limit = new SignInLimit(() => now);
    for (let i = 0; i < 10; i++) expect(limit.admit('a').ok).toBe(true);
    now += 60;
    expect(limit.admit('a')).toEqual({ ok: false, retryAfter: 15 * 60 - 60 });
    expect(limit.admit('b').ok).toBe(true);
    now += 15 * 60;
    expect(limit.admit('a').ok).toBe(true);
  });
});

describe("call-log filter days in the viewer's time zone", () => {
  const iso = (unix: number) => new Date(unix * 1000).toISOString();
  it('starts a day at its midnight in the zone, across daylight-saving changes', () => {
    expect(iso(startOfDay('2026-07-01', 'UTC'))).toBe('2026-07-01T00:00:00.000Z');
    expect(iso(startOfDay('2026-07-01', 'Europe/Paris'))).toBe('2026-06-30T22:00:00.000Z');
    expect(iso(startOfDay('2026-01-15', 'Europe/Paris'))).toBe('2026-01-14T23:00:00.000Z');
    // New York moves to summer time at 02:00 on 8 March 2026: that midnight is still UTC−5, the next UTC−4.
    expect(iso(startOfDay('2026-03-08', 'America/New_York'))).toBe('2026-03-08T05:00:00.000Z');
    expect(iso(startOfDay('2026-03-09', 'America/New_York'))).toBe('2026-03-09T04:00:00.000Z');
    expect(iso(startOfDay('2026-07-01', 'Pacific/Kiritimati'))).toBe('2026-06-30T10:00:00.000Z');
    expect(iso(startOfDay('2026-07-01', 'Asia/Kolkata'))).toBe('2026-06-30T18:30:00.000Z');
  });
  it('knows IANA zones and refuses anything else', () => {
    expect(isTimeZone('Europe/Paris')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    expect(isTimeZone('')).toBe(false);
  });
});

describe('fromOwnOrigin (a form from the console\'s own pages)', () => {
  const host = 'gw.example:8080';
  it('takes the own origin by Origin, else by Referer, and a request with neither', () => {
    expect(fromOwnOrigin({ origin: 'http://gw.example:8080', host })).toBe(true);
    expect(fromOwnOrigin({ origin: 'https://GW.example:8080', host })).toBe(true);
    expect(fromOwnOrigin({ referer: 'https://gw.example:8080/console/sign-in', host })).toBe(true);
    expect(fromOwnOrigin({ origin: 'http://localhost', host: 'localhost:80' })).toBe(true);
    expect(fromOwnOrigin({ origin: 'https://gw.example', host: 'gw.example:443' })).toBe(true);
    expect(fromOwnOrigin({ host })).toBe(true);
    // Behind a proxy that rewrites Host, PUBLIC_BASE_URL names the origin (scheme included).
    expect(fromOwnOrigin({ origin: 'https://gw.example.com', host: '10.0.0.11:8080', publicBaseUrl: 'https://gw.example.com/' })).toBe(true);
    expect(fromOwnOrigin({ origin: 'http://gw.example.com', host: '10.0.0.11:8080', publicBaseUrl: 'https://gw.example.com' })).toBe(false);
  });
  it('refuses another origin, an opaque one, and a foreign Referer when Origin is missing', () => {
    expect(fromOwnOrigin({ origin: 'https://attacker.example', host })).toBe(false);
    expect(fromOwnOrigin({ origin: 'null', host })).toBe(false);
    expect(fromOwnOrigin({ origin: 'http://gw.example:8081', host })).toBe(false);
    expect(fromOwnOrigin({ origin: 'http://gw.example.attacker.example:8080', host })).toBe(false);
    expect(fromOwnOrigin({ origin: 'file:///', host })).toBe(false);
    expect(fromOwnOrigin({ referer: 'https://attacker.example/?u=http://gw.example:8080/', host })).toBe(false);
    // Origin decides when both are sent.
    expect(fromOwnOrigin({ origin: 'https://attacker.example', referer: 'http://gw.example:8080/console/', host })).toBe(false);
    expect(fromOwnOrigin({ origin: 'http://gw.example:8080', host: undefined })).toBe(false);
    expect(fromOwnOrigin({ origin: 'http://attacker.example', host: 'gw.example@attacker.example' })).toBe(false);
  });
});

describe("the usage chart's y axis", () => {
  it('has round values from 0 up to at least the largest day, 4 to 5 lines, written with enough decimals', () => {
    const nano = (usd: number) => BigInt(Math.round(usd * 1e9));
    expect(yTicks(nano(0.0081))).toEqual({ top: 0.01, ticks: [0, 0.0025, 0.005, 0.0075, 0.01], decimals: 4 });
    expect(yTicks(nano(3.7))).toEqual({ top: 4, ticks: [0, 1, 2, 3, 4], decimals: 2 });
    expect(yTicks(nano(12))).toEqual({ top: 15, ticks: [0, 5, 10, 15], decimals: 2 });
    expect(yTicks(0n).ticks).toHaveLength(5);
    for (const max of [0.000_001, 0.3, 7.77, 1234]) {
      const axis = yTicks(nano(max));
      expect(axis.top).toBeGreaterThanOrEqual(max);
      expect(axis.ticks.length).toBeGreaterThanOrEqual(4);
      expect(axis.ticks.length).toBeLessThanOrEqual(6);
    }
  });
});

describe("a call's error in the holder's words", () => {
  it('never names an operator variable', () => {
    expect(holderErrorText('gateway_shutting_down', 'the gateway shut down before the stream finished (SHUTDOWN_GRACE_S ran out)')).toMatch(/^The gateway was restarting/);
    expect(holderErrorText('some_new_code', 'gave up (UPSTREAM_TIMEOUT_MS ran out)')).toBe('Gave up.');
    expect(holderErrorText('some_new_code', 'MAX_BODY_BYTES is too small')).toBe('A gateway setting is too small.');
    expect(holderErrorText('upstream_error', null)).toBe('The call did not complete.');
  });
});
