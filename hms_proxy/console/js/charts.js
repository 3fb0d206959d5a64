// SVG charts drawn here (no library): a histogram of bins and a horizontal bar chart of top
// values. Each is an image with an accessible name, a <title> per bar, and its numbers in a
// data table beside it.
import { h, s } from './dom.js';

const DAY_MS = 86400000;

/** A bound of a histogram in its column's unit, as text. */
export function fmtBound(value, unit) {
  if (value === null || value === undefined) return '';
  if (unit && unit.startsWith('days')) {
    return new Date(Math.round(value) * DAY_MS).toISOString().slice(0, 10);
  }
  if (unit && unit.startsWith('microseconds')) {
    return new Date(value / 1000).toISOString().replace('T', ' ').slice(0, 19);
  }
  const abs = Math.abs(value);
  if (abs !== 0 && (abs >= 1e6 || abs < 1e-3)) return value.toExponential(3);
  return Number(value.toPrecision(6)).toString();
}

function niceMax(max) {
  if (max <= 0) return 1;
  const pow = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * pow >= max) return step * pow;
  }
  return 10 * pow;
}

/** At most ``max`` bars: runs of adjacent bins summed (exact: the bins are equal-width and
 * contiguous, so a run's bounds are its first lower and last upper bound). */
export function rebin(bins, max = 60) {
  if (bins.length <= max) return bins;
  const k = Math.ceil(bins.length / max);
  const out = [];
  for (let i = 0; i < bins.length; i += k) {
    const run = bins.slice(i, i + k);
    out.push({ lower: run[0].lower, upper: run[run.length - 1].upper,
      count: run.reduce((a, b) => a + b.count, 0) });
  }
  return out;
}

/** A histogram: bins [{lower, upper, count}] on a linear x axis (drawn as at most 60 bars). */
export function histogram(allBins, { column, unit } = {}) {
  const W = 640;
  const H = 260;
  const m = { left: 52, right: 14, top: 12, bottom: 44 };
  const bins = rebin(allBins);
  const total = bins.reduce((a, b) => a + b.count, 0);
  const drawn = bins.length < allBins.length ? `, drawn as ${bins.length} bars` : '';
  const label = `Histogram of ${column}: ${allBins.length} bins, ${total} values${drawn}`;
  const root = s('svg', { class: 'chart histogram', viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': label, preserveAspectRatio: 'xMidYMid meet' });
  if (!bins.length) {
    root.append(s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle' }, 'no bins in this range'));
    return root;
  }
  const lo = Math.min(...bins.map((b) => b.lower));
  let hi = Math.max(...bins.map((b) => b.upper));
  if (hi <= lo) hi = lo + 1;
  const ymax = niceMax(Math.max(...bins.map((b) => b.count)));
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const x = (v) => m.left + ((v - lo) / (hi - lo)) * pw;
  const y = (v) => m.top + ph - (v / ymax) * ph;
  // axes and ticks
  root.append(s('line', { class: 'axis', x1: m.left, y1: m.top + ph, x2: m.left + pw, y2: m.top + ph }));
  root.append(s('line', { class: 'axis', x1: m.left, y1: m.top, x2: m.left, y2: m.top + ph }));
  for (let i = 0; i <= 4; i += 1) {
    const v = (ymax * i) / 4;
    root.append(s('line', { class: 'axis', x1: m.left - 4, x2: m.left, y1: y(v), y2: y(v) }));
    root.append(s('text', { class: 'tick', x: m.left - 6, y: y(v) + 4, 'text-anchor': 'end' },
      Number.isInteger(v) ? String(v) : v.toFixed(1)));
  }
  for (let i = 0; i <= 4; i += 1) {
    const v = lo + ((hi - lo) * i) / 4;
    root.append(s('line', { class: 'axis', x1: x(v), x2: x(v), y1: m.top + ph, y2: m.top + ph + 4 }));
    root.append(s('text', { class: 'tick', x: x(v), y: m.top + ph + 17,
      'text-anchor': i === 0 ? 'start' : (i === 4 ? 'end' : 'middle') }, fmtBound(v, unit)));
  }
  root.append(s('text', { class: 'tick', x: m.left + pw / 2, y: H - 6, 'text-anchor': 'middle' },
    unit ? `${column} (${unit})` : column));
  for (const bin of bins) {
    const x0 = x(bin.lower);
    const width = Math.max(1, x(bin.upper) - x0 - 1);
    const top = y(bin.count);
    root.append(s('rect', { class: 'bar', x: x0, y: top, width, height: m.top + ph - top },
      s('title', {}, `[${fmtBound(bin.lower, unit)}, ${fmtBound(bin.upper, unit)}]: ${bin.count}`)));
  }
  return root;
}

/** Horizontal bars of values [{value, frequency}] (the most frequent first). */
export function barChart(values, { column } = {}) {
  const W = 640;
  const row = 24;
  const m = { left: 150, right: 60, top: 6, bottom: 6 };
  const H = m.top + m.bottom + Math.max(1, values.length) * row;
  const label = `Top ${values.length} values of ${column}`;
  const root = s('svg', { class: 'chart bars', viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': label, preserveAspectRatio: 'xMidYMid meet' });
  if (!values.length) {
    root.append(s('text', { x: W / 2, y: H / 2 + 4, 'text-anchor': 'middle' }, 'no values'));
    return root;
  }
  const max = Math.max(...values.map((v) => v.frequency), 1);
  const pw = W - m.left - m.right;
  values.forEach((item, i) => {
    const y0 = m.top + i * row;
    const text = item.value === null ? '(null)' : item.value;
    const shown = text.length > 22 ? `${text.slice(0, 21)}…` : text;
    const width = Math.max(1, (item.frequency / max) * pw);
    root.append(s('text', { x: m.left - 8, y: y0 + row / 2 + 4, 'text-anchor': 'end' }, shown));
    root.append(s('rect', { class: 'hbar', x: m.left, y: y0 + 3, width, height: row - 6 },
      s('title', {}, `${text}: ${item.frequency}`)));
    root.append(s('text', { class: 'tick', x: m.left + width + 6, y: y0 + row / 2 + 4 },
      String(item.frequency)));
  });
  return root;
}

/** The numbers of a chart as a collapsible table (for screen readers and exact values). */
export function dataTable(caption, headers, rows) {
  return h('details', { class: 'data-table' },
    h('summary', {}, `${caption}: data`),
    h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c, i) => h('td', { class: i ? 'num' : '' }, c))))))));
}
