// A grouped horizontal bar chart in plain SVG: one panel per server latency, one group per workload, one bar
// per contender. Bar length is speed relative to the best contender of that workload (1/value for
// lower-is-better metrics), and each bar is labelled with its measured median.
import { summarize, fmt } from './report.mjs';

const COLORS = { seafs: '#1f77b4', rclone: '#ff7f0e', http: '#2ca02c', memfs: '#9467bd' };
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function chart({ title, panels, metrics, contenders }) {
  const W = 980;
  const labelW = 250;
  const barMax = 600;
  const barH = 12;
  const groupGap = 10;
  const parts = [];
  let y = 30;
  parts.push(`<text x="10" y="20" font-size="15" font-weight="bold">${esc(title)}</text>`);
  parts.push(
    `<text x="${W - 10}" y="20" font-size="10" fill="#555" text-anchor="end">bar length: speed relative to the fastest contender of the row</text>`,
  );
  contenders.forEach((c, i) => {
    const x = labelW + i * 120;
    parts.push(`<rect x="${x}" y="${y}" width="12" height="12" fill="${COLORS[c] ?? '#777'}"/>`);
    parts.push(`<text x="${x + 16}" y="${y + 10}" font-size="12">${esc(c)}</text>`);
  });
  y += 30;
  for (const panel of panels) {
    parts.push(`<text x="10" y="${y}" font-size="14" font-weight="bold">${esc(panel.title)}</text>`);
    y += 12;
    for (const m of metrics) {
      const cells = contenders.map((c) => [c, summarize(panel.results[m.id]?.[c])]);
      const speeds = cells.map(([, r]) =>
        r.median && !r.failed ? (m.better === 'higher' ? r.median : 1 / r.median) : 0,
      );
      const best = Math.max(...speeds, 1e-12);
      const groupH = contenders.length * (barH + 2);
      const mid = y + groupH / 2;
      parts.push(`<text x="${labelW - 8}" y="${mid - 2}" font-size="11" text-anchor="end">${esc(m.label)}</text>`);
      parts.push(
        `<text x="${labelW - 8}" y="${mid + 11}" font-size="10" fill="#555" text-anchor="end">${esc(m.unit)}, ${m.better === 'higher' ? 'more' : 'less'} is better</text>`,
      );
      cells.forEach(([c, r], i) => {
        const by = y + i * (barH + 2);
        if (r.na) {
          parts.push(`<text x="${labelW + 4}" y="${by + 10}" font-size="10" fill="#999">${esc(c)}: n/a</text>`);
        } else if (r.failed) {
          parts.push(
            `<text x="${labelW + 4}" y="${by + 10}" font-size="10" fill="#c00">${esc(c)}: FAILED ${esc(r.failed.slice(0, 80))}</text>`,
          );
        } else {
          const w = Math.max(1, (speeds[i] / best) * barMax);
          parts.push(
            `<rect x="${labelW}" y="${by}" width="${w.toFixed(1)}" height="${barH}" fill="${COLORS[c] ?? '#777'}"/>`,
          );
          parts.push(
            `<text x="${(labelW + w + 4).toFixed(1)}" y="${by + 10}" font-size="10">${esc(fmt(r.median))} ${esc(m.unit)}</text>`,
          );
        }
      });
      y += groupH + groupGap;
    }
    y += 16;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y}" viewBox="0 0 ${W} ${y}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
${parts.join('\n')}
</svg>
`;
}
