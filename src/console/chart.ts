import { formatUsd } from '../money/usd';
import { html, type Html } from './html';
import type { DailyUsage } from '../projections/call-log/queries';

/** At most this many models get a colour of their own; the rest are stacked as "other". */
const SERIES = 5;

/** Nano-dollars per dollar (the ledger's unit). */
const NANO = 1_000_000_000;

/**
 * One drawing of the chart. An SVG scales its text with its width, so a phone gets a drawing of its
 * own, about as wide as its screen (labels stay at their size), and the stylesheet shows one of the two.
 */
interface Frame {
  readonly className: string;
  readonly width: number;
  readonly height: number;
  /** room for the y labels */
  readonly left: number;
  /** a label every this many days */
  readonly dayStep: number;
}
const WIDE: Frame = { className: 'chart-wide', width: 720, height: 240, left: 76, dayStep: 4 };
const NARROW: Frame = { className: 'chart-narrow', width: 340, height: 240, left: 62, dayStep: 7 };

/** Round numbers for the y axis: 0, step, 2·step, … up to at least the largest day (4 to 5 lines). */
export function yTicks(maxNano: bigint): { readonly top: number; readonly ticks: readonly number[]; readonly decimals: number } {
  const max = Number(maxNano) / NANO;
  if (max <= 0) return { top: 1, ticks: [0, 0.25, 0.5, 0.75, 1], decimals: 2 };
  const rough = max / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough)!;
  const count = Math.ceil(max / step - 1e-9);
  const ticks = Array.from({ length: count + 1 }, (_, i) => i * step);
  const decimals = Math.max(2, -Math.floor(Math.log10(step)) + (step / magnitude === 2.5 ? 1 : 0));
  return { top: count * step, ticks, decimals };
}

/** Cost per day stacked by model, as SVG drawn on the server (no script, no inline style: the colours
 * are classes of the stylesheet), each bar with a tooltip, and the same numbers as a table below. */
export function usageChart(days: readonly string[], usage: readonly DailyUsage[], zoneLabel = 'UTC'): Html {
  const totals = new Map<string, bigint>();
  for (const u of usage) totals.set(u.model, (totals.get(u.model) ?? 0n) + u.cost);
  const ranked = [...totals.entries()].sort((a, b) => (b[1] > a[1] ? 1 : b[1] < a[1] ? -1 : a[0].localeCompare(b[0]))).map(([m]) => m);
  const named = ranked.slice(0, SERIES);
  const series = (model: string) => (named.includes(model) ? named.indexOf(model) : SERIES);
  const byDay = new Map<string, bigint[]>(days.map((d) => [d, new Array<bigint>(SERIES + 1).fill(0n)]));
  const modelsByDay = new Map<string, DailyUsage[]>();
  for (const u of usage) {
    const row = byDay.get(u.day);
    if (!row) continue;
    row[series(u.model)]! += u.cost;
    modelsByDay.set(u.day, [...(modelsByDay.get(u.day) ?? []), u]);
  }
  const dayTotal = (d: string) => byDay.get(d)!.reduce((a, b) => a + b, 0n);
  const max = days.reduce((m, d) => (dayTotal(d) > m ? dayTotal(d) : m), 0n);
  const axis = yTicks(max);
  const legend = [...named, ...(ranked.length > SERIES ? ['other models'] : [])];
  const seriesName = (s: number) => legend[s] ?? 'other models';
  const title = `Cost per day (${zoneLabel}), by model`;

  const drawing = (f: Frame) => {
    const bottom = 28;
    const plotH = f.height - bottom - 12;
    const base = f.height - bottom;
    const slot = (f.width - f.left) / Math.max(days.length, 1);
    const barW = Math.max(2, slot * 0.7);
    const scale = (v: bigint) => (Number(v) / NANO / axis.top) * plotH;
    const grid = axis.ticks.map((t) => {
      const y = base - (t / axis.top) * plotH;
      return html`<line class="grid-line" x1="${f.left}" x2="${f.width}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}"/><text class="axis" text-anchor="end" x="${f.left - 6}" y="${(y + 4).toFixed(1)}">$${t === 0 ? '0' : t.toFixed(axis.decimals)}</text>`;
    });
    const bars = days.map((d, i) => {
      let y = base;
      return byDay.get(d)!.map((v, s) => {
        if (v === 0n) return html``;
        const h = scale(v);
        y -= h;
        return html`<rect class="s${s}" x="${(f.left + i * slot).toFixed(1)}" y="${y.toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.max(h, 0.5).toFixed(1)}"><title>${d}, ${seriesName(s)}: $${formatUsd(v)} (day: $${formatUsd(dayTotal(d))})</title></rect>`;
      });
    });
    // Labelled back from the latest day; that one ends at the right edge so it is never cut.
    const xLabels = days.map((d, i) => {
      if ((days.length - 1 - i) % f.dayStep !== 0) return html``;
      const last = i === days.length - 1;
      const x = last ? f.width : f.left + i * slot + barW / 2;
      return html`<text class="axis" text-anchor="${last ? 'end' : 'middle'}" x="${x.toFixed(1)}" y="${f.height - 8}">${d.slice(5)}</text>`;
    });
    return html`<svg class="${f.className}" viewBox="0 0 ${f.width} ${f.height}" role="img" aria-label="${title}">
${grid}${bars}${xLabels}
</svg>`;
  };

  const activeDays = days.filter((d) => dayTotal(d) > 0n);
  return html`<figure class="chart">
<figcaption class="chart-title">${title}</figcaption>
${drawing(WIDE)}${drawing(NARROW)}
<ul class="legend">${legend.map((m, i) => html`<li><span class="sw s${i}"></span>${m}</li>`)}</ul>
<details class="chart-table"><summary>The same as a table (${activeDays.length} days with calls)</summary>
<div class="table-wrap"><table><thead><tr><th scope="col">Day</th><th scope="col" class="num">Cost</th><th scope="col">By model</th></tr></thead>
<tbody>${activeDays.map(
    (d) =>
      html`<tr><td>${d}</td><td class="num">$${formatUsd(dayTotal(d))}</td><td>${(modelsByDay.get(d) ?? [])
        .slice()
        .sort((a, b) => (b.cost > a.cost ? 1 : b.cost < a.cost ? -1 : 0))
        .map((u) => `${u.model} $${formatUsd(u.cost)}`)
        .join(', ')}</td></tr>`,
  )}</tbody></table></div></details>
</figure>`;
}
