import { formatUsd } from '../money/usd';
import { html, type Html } from './html';
import type { DailyUsage } from '../projections/call-log/queries';

/** At most this many models get a colour of their own; the rest are stacked as "other". */
const SERIES = 5;

/** Cost per day stacked by model, as an SVG drawn on the server (no script, no inline style: the
 * colours are classes of the stylesheet), with a table of the same numbers for screen readers. */
export function usageChart(days: readonly string[], usage: readonly DailyUsage[]): Html {
  const totals = new Map<string, bigint>();
  for (const u of usage) totals.set(u.model, (totals.get(u.model) ?? 0n) + u.cost);
  const ranked = [...totals.entries()].sort((a, b) => (b[1] > a[1] ? 1 : b[1] < a[1] ? -1 : a[0].localeCompare(b[0]))).map(([m]) => m);
  const named = ranked.slice(0, SERIES);
  const series = (model: string) => (named.includes(model) ? named.indexOf(model) : SERIES);
  const byDay = new Map<string, bigint[]>(days.map((d) => [d, new Array<bigint>(SERIES + 1).fill(0n)]));
  for (const u of usage) {
    const row = byDay.get(u.day);
    if (row) row[series(u.model)]! += u.cost;
  }
  const dayTotal = (d: string) => byDay.get(d)!.reduce((a, b) => a + b, 0n);
  const max = days.reduce((m, d) => (dayTotal(d) > m ? dayTotal(d) : m), 0n);
  const width = 720;
  const height = 220;
  const left = 56;
  const bottom = 24;
  const plotH = height - bottom - 10;
  const slot = (width - left) / Math.max(days.length, 1);
  const barW = Math.max(2, slot * 0.7);
  const scale = (v: bigint) => (max === 0n ? 0 : Number((v * 1_000_000n) / max) / 1_000_000) * plotH;
  const bars = days.map((d, i) => {
    let y = height - bottom;
    return byDay.get(d)!.map((v, s) => {
      if (v === 0n) return html``;
      const h = scale(v);
      y -= h;
      return html`<rect class="s${s}" x="${(left + i * slot).toFixed(1)}" y="${y.toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.max(h, 0.5).toFixed(1)}"><title>${d}: $${formatUsd(v)}</title></rect>`;
    });
  });
  const labelEvery = Math.ceil(days.length / 8);
  const xLabels = days.map((d, i) => (i % labelEvery === 0 ? html`<text class="axis" x="${(left + i * slot).toFixed(1)}" y="${height - 6}">${d.slice(5)}</text>` : html``));
  const legend = [...named, ...(ranked.length > SERIES ? ['other models'] : [])];
  return html`<figure class="chart">
<svg viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="chart-title">
<title id="chart-title">Cost per day (UTC), by model</title>
<line class="grid-line" x1="${left}" x2="${width}" y1="${height - bottom}" y2="${height - bottom}"/>
<line class="grid-line" x1="${left}" x2="${width}" y1="${height - bottom - plotH}" y2="${height - bottom - plotH}"/>
<text class="axis" x="0" y="${height - bottom - plotH + 4}">$${formatUsd(max)}</text>
<text class="axis" x="0" y="${height - bottom}">$0</text>
${bars}${xLabels}
</svg>
<figcaption><ul class="legend">${legend.map((m, i) => html`<li><span class="sw s${i}"></span>${m}</li>`)}</ul></figcaption>
</figure>`;
}
