// Reproduction for "batches of helper runs time out although the helper answered": several
// ProcessHelper instances (one per site, each with its own spawner process) started together, each
// keeping `--workers` runs in flight until `--runs` are done, as the workers of a site do.
//
// Measured:
//   - the event-loop delay of this process (perf_hooks.monitorEventLoopDelay, 10 ms resolution)
//   - per run, the delivery latency: from the helper's exit (the helper prints Date.now() as the
//     last thing it does) to the moment this process settles the run
//   - per run, the wall time from run() to the settled promise, and the helper time limit outcome
//
// Usage: node bench/helper-burst.mjs [--sites 2] [--runs 150,100] [--workers 50] [--timeout-ms 10000]
//        [--rounds 1] [--block-ms 0] [--helper node|sh]
// --block-ms N blocks this process's event loop for N ms right after the first wave of starts (a
// stand-in for the provisioner's own start-up work: key loading, TLS, the first discovery replies).
// Needs `npm run build` (it loads the compiled library).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';
import { parseArgs } from 'node:util';
import { ProcessHelper, HelperError } from '../packages/core/dist/host/helper/index.js';

const { values: opt } = parseArgs({
  options: {
    sites: { type: 'string', default: '2' },
    runs: { type: 'string', default: '150,100' },
    workers: { type: 'string', default: '50' },
    'timeout-ms': { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '1' },
    'block-ms': { type: 'string', default: '0' },
    helper: { type: 'string', default: 'node' },
  },
});
const sites = Number(opt.sites);
const runsPerSite = opt.runs.split(',').map(Number);
const workers = Number(opt.workers);
const timeoutMs = Number(opt['timeout-ms']);
const blockMs = Number(opt['block-ms']);

const dir = mkdtempSync(join(tmpdir(), 'cpts-burst-'));
const NODE_HELPER = join(dir, 'stamp-helper.mjs');
writeFileSync(
  NODE_HELPER,
  `let s='';process.stdin.on('data',(c)=>{s+=c});process.stdin.on('end',()=>{const r=JSON.parse(s);` +
    `process.stdout.write(JSON.stringify({configuration:{identity:r.identity,'plugin.choria.server.provision':'false',exitedAt:String(Date.now())}}));});\n`,
);
const SH_HELPER = join(dir, 'stamp-helper.sh');
writeFileSync(
  SH_HELPER,
  `#!/bin/sh\nIFS= read -r request || true\nprintf '{"configuration":{"plugin.choria.server.provision":"false","exitedAt":"%s"}}' "$(date +%s%3N)"\n`,
  { mode: 0o755 },
);
const command = opt.helper === 'sh' ? SH_HELPER : `${process.execPath} ${NODE_HELPER}`;

const request = (identity) => ({ identity, csr: null, ed25519_pubkey: null, inventory: '{}', jwt: null });

function pct(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const fmt = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return `n=${s.length} p50=${pct(s, 50)} p99=${pct(s, 99)} max=${s.at(-1)}`;
};

async function site(index, helper, total) {
  const delivery = [];
  const wall = [];
  const errors = {};
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const id = `s${index}-n${next++}.example.net`;
      const t0 = performance.now();
      try {
        const r = await helper.run(request(id), { identity: id });
        const settledAt = Date.now();
        wall.push(Math.round(performance.now() - t0));
        delivery.push(settledAt - Number(r.reply.configuration?.exitedAt));
      } catch (err) {
        const kind = err instanceof HelperError ? err.kind : 'other';
        errors[kind] = (errors[kind] ?? 0) + 1;
        if (errors[kind] <= 2) console.error(`site ${index}: ${String(err.message).slice(0, 300)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return { delivery, wall, errors };
}

for (let round = 1; round <= Number(opt.rounds); round++) {
  const helpers = Array.from({ length: sites }, () => new ProcessHelper({ command, timeoutMs }));
  const eld = monitorEventLoopDelay({ resolution: 10 });
  eld.enable();
  const t0 = performance.now();
  const running = helpers.map((h, i) => site(i, h, runsPerSite[i] ?? runsPerSite.at(-1)));
  if (blockMs > 0) {
    // the first wave is handed to the spawners; now this process does not read its channels
    await new Promise((r) => setImmediate(r));
    const until = performance.now() + blockMs;
    while (performance.now() < until);
  }
  const results = await Promise.all(running);
  eld.disable();
  const ms = Math.round(performance.now() - t0);
  await Promise.all(helpers.map((h) => h.close()));
  console.log(
    `round ${round}: ${ms} ms; event-loop delay max=${Math.round(eld.max / 1e6)} ms p99=${Math.round(eld.percentile(99) / 1e6)} ms mean=${Math.round(eld.mean / 1e6)} ms`,
  );
  results.forEach((r, i) => {
    console.log(
      `  site ${i}: errors=${JSON.stringify(r.errors)} delivery(exit->settled ms) ${fmt(r.delivery)} | wall(run->settled ms) ${fmt(r.wall)}`,
    );
  });
}
rmSync(dir, { recursive: true, force: true });
