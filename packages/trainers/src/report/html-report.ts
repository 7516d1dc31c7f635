import type { MetricRecord } from '../metrics/metrics-log.js';

const W = 460;
const H = 240;
const PAD = { left: 58, right: 12, top: 12, bottom: 30 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];

const esc = (s: string) =>
  s.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string,
  );
const num = (x: number) =>
  Math.abs(x) >= 1e-3 || x === 0 ? Number(x.toPrecision(4)).toString() : x.toExponential(2);

type Series = { name: string; points: [number, number][] };

/** Groups `split/name` tags by name so train/loss and test/loss share a chart. */
export function chartSeries(records: readonly MetricRecord[]): Map<string, Series[]> {
  const charts = new Map<string, Map<string, [number, number][]>>();
  for (const r of records) {
    for (const [tag, value] of Object.entries(r)) {
      if (tag === 'step' || tag === 'time' || typeof value !== 'number' || !Number.isFinite(value))
        continue;
      const slash = tag.indexOf('/');
      const metric = slash < 0 ? tag : tag.slice(slash + 1);
      const series = charts.get(metric) ?? new Map<string, [number, number][]>();
      charts.set(metric, series);
      const points = series.get(tag) ?? [];
      series.set(tag, points);
      points.push([r.step, value]);
    }
  }
  return new Map(
    [...charts].map(([metric, series]) => [
      metric,
      [...series].map(([name, points]) => ({ name, points })),
    ]),
  );
}

/** One inline-SVG line chart; single points are drawn as dots. */
function svgChart(title: string, series: readonly Series[]): string {
  const all = series.flatMap((s) => s.points);
  const [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
  if (y0 === y1) [y0, y1] = [y0 - 0.5 * Math.abs(y0 || 1), y1 + 0.5 * Math.abs(y1 || 1)];
  const sx = (x: number) =>
    PAD.left + ((x - x0) / Math.max(1e-12, x1 - x0)) * (W - PAD.left - PAD.right);
  const sy = (y: number) => H - PAD.bottom - ((y - y0) / (y1 - y0)) * (H - PAD.top - PAD.bottom);
  const ticks = [0, 0.5, 1].map((f) => y0 + f * (y1 - y0));
  const lines = series.map((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
    const dots =
      s.points.length <= 40
        ? s.points
            .map(
              ([x, y]) =>
                `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.5" fill="${color}"/>`,
            )
            .join('')
        : '';
    return `<polyline fill="none" stroke="${color}" stroke-width="1.6" points="${pts}"/>${dots}`;
  });
  const legend = series
    .map((s, i) => `<tspan fill="${COLORS[i % COLORS.length]}">■ ${esc(s.name)}</tspan>`)
    .join(' ');
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H + 16}" ` +
    `viewBox="0 0 ${W} ${H + 16}" role="img" aria-label="${esc(title)}">`;
  const stepAxis =
    `<text x="${PAD.left}" y="${H - 12}" font-size="10">${x0}</text>` +
    `<text x="${W - PAD.right}" y="${H - 12}" font-size="10" text-anchor="end">${x1}</text>` +
    `<text x="${(W + PAD.left) / 2}" y="${H - 12}" font-size="10" text-anchor="middle">step</text>`;
  const tickMarks = ticks
    .map(
      (t) =>
        `<text x="${PAD.left - 4}" y="${sy(t) + 4}" text-anchor="end" font-size="10">${num(t)}</text>` +
        `<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`,
    )
    .join('');
  return `<figure><figcaption>${esc(title)}</figcaption>${svg}
<rect x="${PAD.left}" y="${PAD.top}" width="${W - PAD.left - PAD.right}" height="${H - PAD.top - PAD.bottom}" fill="#fafafa" stroke="#ccc"/>
${tickMarks}
${stepAxis}
${lines.join('\n')}
<text x="${PAD.left}" y="${H + 10}" font-size="11">${legend}</text></svg></figure>`;
}

const STYLE =
  'body{font-family:system-ui,sans-serif;margin:24px;color:#222}' +
  'figure{display:inline-block;margin:8px}figcaption{font-weight:600}' +
  'table{border-collapse:collapse}' +
  'td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}td:first-child{text-align:left}';

/**
 * A self-contained HTML report (inline SVG, no scripts, no network) of every metric in
 * `records`, with a table of first / last / best values.
 */
export function renderHtmlReport(
  title: string,
  records: readonly MetricRecord[],
  notes: readonly string[] = [],
): string {
  const charts = chartSeries(records);
  const rows = [...charts.values()].flatMap((series) =>
    series.map((s) => {
      const ys = s.points.map((p) => p[1]);
      return (
        `<tr><td>${esc(s.name)}</td><td>${s.points.length}</td><td>${num(ys[0])}</td>` +
        `<td>${num(ys[ys.length - 1])}</td><td>${num(Math.min(...ys))}</td>` +
        `<td>${num(Math.max(...ys))}</td></tr>`
      );
    }),
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>${STYLE}</style>
</head><body><h1>${esc(title)}</h1>
${notes.map((n) => `<p>${esc(n)}</p>`).join('\n')}
${records.length === 0 ? '<p>No metrics recorded yet.</p>' : ''}
<table><tr><th>metric</th><th>points</th><th>first</th><th>last</th><th>min</th><th>max</th></tr>
${rows.join('\n')}</table>
${[...charts].map(([metric, series]) => svgChart(metric, series)).join('\n')}
</body></html>
`;
}
