// Medians, ratios and the text table.

export function median(xs) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A cell's outcome: {median} when every run measured, {failed: reason} when any run failed, {na} when n/a. */
export function summarize(cell) {
  if (!cell) return { na: true };
  if (cell.errors.length) return { failed: cell.errors[0], runs: cell.values.length + cell.errors.length, median: median(cell.values) };
  if (!cell.values.length) return { na: true };
  return { median: median(cell.values), runs: cell.values.length, values: cell.values };
}

/**
 * How many times better seafs is than `other` on this metric: > 1 means seafs is faster (or smaller).
 * For higher-is-better metrics it is seafs/other, for lower-is-better other/seafs.
 */
export function seafsAdvantage(metric, seafs, other) {
  if (seafs == null || other == null || seafs === 0 || other === 0) return null;
  return metric.better === 'higher' ? seafs / other : other / seafs;
}

export function fmt(v) {
  if (v == null) return '-';
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  if (v >= 1) return v.toFixed(2);
  return v.toFixed(3);
}

const pad = (s, w, right = false) => (right ? s.padStart(w) : s.padEnd(w));

/** Plain-text table: one row per metric, one column per contender; footnotes carry full failure reasons. */
export function table({ latencyMs, metrics, contenders, results, note = '' }) {
  const notes = [];
  const header = ['workload', 'unit', ...contenders.map((c) => (c === 'seafs' ? 'seafs' : `${c} (seafs adv.)`))];
  const rows = metrics.map((m) => {
    const cells = results[m.id] ?? {};
    const s = summarize(cells.seafs);
    return [
      m.label,
      `${m.unit} ${m.better === 'higher' ? '↑' : '↓'}`,
      ...contenders.map((c) => {
        const r = summarize(cells[c]);
        if (r.na) return 'n/a';
        if (r.failed) {
          notes.push(`[${notes.length + 1}] ${c}, ${m.label}: ${r.failed}`);
          return `FAILED[${notes.length}] ${r.failed.slice(0, 36)}`;
        }
        if (c === 'seafs') return fmt(r.median);
        const adv = s.failed || s.na ? null : seafsAdvantage(m, s.median, r.median);
        return `${fmt(r.median)}${adv == null ? '' : ` (${adv.toFixed(2)}x)`}`;
      }),
    ];
  });
  const widths = header.map((h, i) => Math.max([...h].length, ...rows.map((r) => [...r[i]].length)));
  const line = (r) => '| ' + r.map((x, i) => pad(x, widths[i] + x.length - [...x].length, i > 1)).join(' | ') + ' |';
  const out = [
    `server latency ${latencyMs} ms (medians; "seafs adv." = how many times better seafs is: >1 seafs wins)`,
    line(header),
    '|' + widths.map((w, i) => (i > 1 ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|') + '|',
    ...rows.map(line),
  ];
  return [...out, ...notes, ...(note ? [note] : [])].join('\n');
}
