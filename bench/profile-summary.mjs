// Sums self time per function, per file and per package of a V8 .cpuprofile (node --cpu-prof).
// usage: node bench/profile-summary.mjs FILE.cpuprofile [--top 25] [--lines]
//   --lines  also self time per source line (inlined callees count towards the caller's line)
import { readFileSync } from 'node:fs';
import { URL } from 'node:url';

/** file:// URL of the repository, stripped from the names of its files */
const ROOT_URL = new URL('..', import.meta.url).href;

const file = process.argv[2];
if (file === undefined) {
  process.stderr.write('usage: node bench/profile-summary.mjs FILE.cpuprofile [--top N]\n');
  process.exit(2);
}
// piped into head: stop quietly
process.stdout.on('error', (err) => process.exit(err.code === 'EPIPE' ? 0 : 1));
const topAt = process.argv.indexOf('--top');
const top = topAt > 0 ? Number(process.argv[topAt + 1]) : 25;

/** Self time (ms) per profile node id, from the samples and their time deltas. */
function selfTimes(profile) {
  const self = new Map();
  const { samples = [], timeDeltas = [] } = profile;
  for (let i = 0; i < samples.length; i++) {
    // timeDeltas[i] is the time since the previous sample: it belongs to sample i-1's node, but
    // attributing it to sample i is the usual convention (DevTools does the same) and is unbiased.
    self.set(samples[i], (self.get(samples[i]) ?? 0) + (timeDeltas[i] ?? 0) / 1000);
  }
  return self;
}

function shortUrl(url) {
  if (url === '') return '(native)';
  return url.startsWith(ROOT_URL) ? url.slice(ROOT_URL.length) : url.replace(/^file:\/\//, '');
}

function packageOf(url) {
  const u = shortUrl(url);
  if (u === '(native)') return '(native/V8)';
  if (u.startsWith('node:')) return 'node: built-ins';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (nm !== null) return nm[1];
  const pkg = /^packages\/([^/]+)\//.exec(u);
  if (pkg !== null) return `@choria-provisioner/${pkg[1]}`;
  return u.split('/').slice(0, 2).join('/');
}

const profile = JSON.parse(readFileSync(file, 'utf8'));
const self = selfTimes(profile);
const byFunction = new Map();
const byFile = new Map();
const byPackage = new Map();
let total = 0;
for (const node of profile.nodes) {
  const ms = self.get(node.id) ?? 0;
  if (ms === 0) continue;
  total += ms;
  const cf = node.callFrame;
  const fn = `${cf.functionName || '(anonymous)'} ${shortUrl(cf.url)}:${cf.lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
  byFile.set(shortUrl(cf.url), (byFile.get(shortUrl(cf.url)) ?? 0) + ms);
  byPackage.set(packageOf(cf.url), (byPackage.get(packageOf(cf.url)) ?? 0) + ms);
}

function print(title, map, n) {
  process.stdout.write(`\n${title}\n`);
  const rows = [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
  for (const [k, v] of rows)
    process.stdout.write(`${v.toFixed(0).padStart(8)} ms ${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}\n`);
}

process.stdout.write(`${file}: ${total.toFixed(0)} ms sampled\n`);
print('by package', byPackage, 15);
print('by file', byFile, top);
print('by function (self time)', byFunction, top);

// Hot lines: V8 records ticks per source line of each function; a sample's time is the average
// sampling interval. Inlined callees count towards the caller's line that called them.
const interval = total / Math.max(1, (profile.samples ?? []).length);
const byLine = new Map();
for (const node of profile.nodes) {
  if (node.positionTicks === undefined || node.callFrame.url === '') continue;
  for (const t of node.positionTicks) {
    const key = `${shortUrl(node.callFrame.url)}:${t.line} (${node.callFrame.functionName || 'anonymous'})`;
    byLine.set(key, (byLine.get(key) ?? 0) + t.ticks * interval);
  }
}
if (process.argv.includes('--lines')) print('by source line', byLine, top);
