// Nodes restarted over time for each process of the peer scenarios (bench/peer.mjs), one pass, as
// an SVG: the simulator's count of `restart` requests received, polled every 25 ms from spawning
// each process. Reads the raw results of `node bench/run.mjs --only peer --out FILE`.
// usage: node bench/peer-plot.mjs RESULTS.json [--pass N] [--svg docs/bench-peer.svg]
import { readFileSync, writeFileSync } from 'node:fs';

function arg(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
}
const file = process.argv[2];
if (file === undefined || file.startsWith('--')) {
  process.stderr.write('usage: node bench/peer-plot.mjs RESULTS.json [--pass N] [--svg FILE]\n');
  process.exit(2);
}
const pass = Number(arg('--pass', '1'));
const svgFile = arg('--svg', 'docs/bench-peer.svg');
const { info, results } = JSON.parse(readFileSync(file, 'utf8'));

const SERIES = [
  { who: 'upstream', label: 'upstream Go provisioner (one process per node)', color: '#d62728' },
  { who: 'process', label: 'this project, helper_mode process', color: '#1f77b4' },
  { who: 'process-python3', label: 'the same, helper_spawner python3', color: '#17becf' },
  { who: 'process-none', label: 'the same, helper_spawner none', color: '#ff7f0e' },
  { who: 'pool', label: 'this project, helper_mode pool', color: '#2ca02c' },
  { who: 'client', label: 'helper-less client (nats.js alone)', color: '#7f7f7f' },
];
const series = [];
for (const s of SERIES) {
  const id = Object.keys(results).find((k) => k.startsWith(`peer/jwt/${s.who}/`));
  const run = (results[id] ?? []).find((r) => r.pass === pass);
  // a build without version information says 0.0.0: no version is better than that one
  const known = run?.version !== undefined && !['0.0.0', 'unknown'].includes(run.version);
  if (run !== undefined)
    series.push({
      ...s,
      label: s.who === 'upstream' && known ? s.label.replace('provisioner', `provisioner ${run.version}`) : s.label,
      run,
    });
}
if (series.length === 0) {
  process.stderr.write(`no peer runs of pass ${pass} in ${file}\n`);
  process.exit(1);
}

const W = 760;
const H = 300 + 18 * SERIES.length;
const M = { left: 64, right: 20, top: 48, bottom: 60 + 18 * SERIES.length };
const pw = W - M.left - M.right;
const ph = H - M.top - M.bottom;
const maxMs = Math.max(...series.map((s) => s.run.timeline[s.run.timeline.length - 1][0]));
const maxN = Math.max(...series.map((s) => s.run.count));
const niceStep = (max, ticks) => {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((f) => f * mag).find((v) => v >= raw);
};
const xStep = niceStep(maxMs / 1000, 8);
const xMax = Math.ceil(maxMs / 1000 / xStep) * xStep;
const yStep = niceStep(maxN, 5);
const yMax = Math.ceil(maxN / yStep) * yStep;
const X = (ms) => M.left + (ms / 1000 / xMax) * pw;
const Y = (n) => M.top + ph - (n / yMax) * ph;
const esc = (t) => String(t).replace(/&/g, '&amp;').replace(/</g, '&lt;');

const out = [];
out.push(
  `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
);
out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
out.push(
  `<text x="${M.left}" y="20" font-size="14" font-weight="bold">Nodes restarted over time: ${series[0].run.count.toLocaleString('en-US')} nodes, jwt flow, ${series[0].run.workers} workers (pass ${pass})</text>`,
);
out.push(
  `<text x="${M.left}" y="36" fill="#555">${esc(info?.cpu ?? '')}; ${esc(info?.node ?? '')}; simulator polled every 25 ms from spawning each process</text>`,
);
for (let v = 0; v <= xMax + 1e-9; v += xStep) {
  out.push(`<line x1="${X(v * 1000)}" y1="${M.top}" x2="${X(v * 1000)}" y2="${M.top + ph}" stroke="#eee"/>`);
  out.push(`<text x="${X(v * 1000)}" y="${M.top + ph + 16}" text-anchor="middle">${Number(v.toFixed(3))}</text>`);
}
for (let v = 0; v <= yMax; v += yStep) {
  out.push(`<line x1="${M.left}" y1="${Y(v)}" x2="${M.left + pw}" y2="${Y(v)}" stroke="#eee"/>`);
  out.push(`<text x="${M.left - 6}" y="${Y(v) + 4}" text-anchor="end">${v.toLocaleString('en-US')}</text>`);
}
out.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`);
out.push(
  `<text x="${M.left + pw / 2}" y="${M.top + ph + 34}" text-anchor="middle">seconds since the process was spawned</text>`,
);
out.push(
  `<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">restart requests received</text>`,
);
series.forEach((s, i) => {
  // a step line: the count holds until the next poll that saw it change
  const pts = [];
  let prev;
  for (const [ms, n] of s.run.timeline) {
    if (prev !== undefined) pts.push(`${X(ms).toFixed(1)},${Y(prev).toFixed(1)}`);
    pts.push(`${X(ms).toFixed(1)},${Y(n).toFixed(1)}`);
    prev = n;
  }
  out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.join(' ')}"/>`);
  const y = M.top + ph + 56 + i * 18;
  out.push(
    `<line x1="${M.left}" y1="${y - 4}" x2="${M.left + 24}" y2="${y - 4}" stroke="${s.color}" stroke-width="3"/>`,
  );
  const rate = Math.round(s.run.nodesPerMin).toLocaleString('en-US');
  out.push(
    `<text x="${M.left + 32}" y="${y}">${esc(s.label)}: ${rate} nodes/min first request to last restart, last restart at ${(s.run.spawnToLastMs / 1000).toFixed(2)} s</text>`,
  );
});
out.push('</svg>');
writeFileSync(svgFile, `${out.join('\n')}\n`);
process.stdout.write(`wrote ${svgFile} (pass ${pass}: ${series.map((s) => s.who).join(', ')})\n`);
