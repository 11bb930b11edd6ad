// npm run bench: provisioning throughput, time per node, memory and discovery of the provisioner
// against a simulated fleet. A private nats-server on a free loopback port; every scenario in a
// fresh process (bench/scenario.mjs) with the fleet in another (the simulator bin), so the figures
// are the provisioner's own. Passes are interleaved (all scenarios once, then again) so a burst of
// load from other programs on the machine hits different scenarios, and medians are reported.
//
// usage: npm run build --silent && node bench/run.mjs [--repeat N] [--quick] [--only ID,ID] [--profile DIR] [--out FILE]
//   --repeat N     passes over every scenario (default: 2; 1 for ed25519
//                  10,000 and the 50,000 comparison; run the whole benchmark twice for stable medians)
//   --quick        1,000 nodes only, one pass (a smoke test of the harness)
//   --full         also the limit / naive / product comparison at 50,000 nodes (one pass)
//   --only IDS     comma-separated scenario ids or prefixes (see the table), e.g. plain/function
//   --profile DIR  run the scenarios with node --cpu-prof into DIR (and the simulator with
//                  BENCH_SIMULATOR_NODE_OPTIONS); summarise with node bench/profile-summary.mjs
//   --out FILE     write every result as JSON (default: a file in the temp dir)
//   --report FILE  print the report of such a file again instead of running (add --full for its 50,000 runs)
// peer/* runs the upstream Go provisioner from $CHORIA_LAB_DIR/bin/choria-provisioner (default
// ~/.cache/choria-provisioner-ts/lab) beside this project's CLI; without it, one line says so.
// BENCH_BASELINE=DIR adds peer/* scenarios of the CLI of the built checkout in DIR (base-process,
// base-process-python3, base-pool), with the ratios of this checkout's to them pass by pass.
import { execFileSync, spawn } from 'node:child_process';
import { cpus, tmpdir, totalmem } from 'node:os';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { URL, fileURLToPath } from 'node:url';
import { makeIssuerKeys } from './lib/keys.mjs';
import { upstreamBinary } from './peer.mjs';
import { natsEnv, startNatsServer } from './lib/nats-server.mjs';
import { fmt, median } from './lib/stats.mjs';

const HERE = fileURLToPath(new URL('.', import.meta.url));

function arg(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
}
const quick = process.argv.includes('--quick');
const repeatArg = arg('--repeat', quick ? '1' : undefined);
const repeat = repeatArg === undefined ? undefined : Number(repeatArg);
/** passes of a scenario: --repeat, else its default */
const passes = (def) => repeat ?? def;
const only = arg('--only', '')
  .split(',')
  .filter((x) => x !== '');
const profileDir = arg('--profile', undefined);
const outFile = arg('--out', join(tmpdir(), `choria-provisioner-bench-${Date.now()}.json`));

// Knobs: the workers each helper mode needs to keep 2 cores busy, and the fleet sizes the targets name.
const KNOBS = {
  functionWorkers: 64,
  poolWorkers: 64,
  poolSize: 2, // one helper process per core: more only add context switches on 2 cores
  processWorkers: 16, // the helper spawner forks one at a time; 16 keep it busy
  nodesPerConnection: 1000,
  timeScale: 0.001, // restart delays of 2-3 s become 2-3 ms: the fleet never holds up the provisioner
  processCount: 2000,
  bareCount: 2000,
  bareSequentialCount: 500, // one at a time: context for the concurrent rates
  discoveryCount: 10_000,
  queueCount: 50_000,
  activeActiveCount: 600, // 600 x 200 ms / 4 workers: ~30 s for one instance
  historyFlowCount: 10_000,
  historyScaleCount: 100_000, // the fleet size the history's bounds are stated for
  compareWorkers: 50, // the naive client and the limit driver run as many nodes at a time as the product
  poolDepth: Number(process.env.BENCH_POOL_DEPTH ?? 16), // requests in flight per pool helper process in the comparison
  peerCount: quick ? 1000 : 2000, // beside the upstream Go provisioner: every provisioner spawned as a process, jwt flow
  peerWorkers: 50,
};

const full = process.argv.includes('--full');
const BASELINE =
  process.env.BENCH_BASELINE === undefined || process.env.BENCH_BASELINE === ''
    ? undefined
    : join(process.env.BENCH_BASELINE, 'packages', 'cli', 'dist', 'bin.js');
/** The peer scenarios (bench/peer.mjs), in the order each pass runs them. */
const PEERS = {
  upstream: { provisioner: 'upstream' },
  // one helper process per node, started by the default spawner (the Node companion), the opt-in
  // Python companion, and the provisioner's own process (helper_spawner none)
  process: { provisioner: 'process' },
  'process-python3': { provisioner: 'process', spawner: 'python3' },
  'process-none': { provisioner: 'process', spawner: 'none' },
  pool: { provisioner: 'pool' },
  client: { provisioner: 'client' },
  // BENCH_BASELINE: the root of another checkout, built: its CLI beside this one's, with the same
  // helper mode and spawner, so a change's cost is measured side by side in one run
  ...(BASELINE === undefined
    ? {}
    : {
        'base-process': { provisioner: 'process', spawner: 'node', cli: BASELINE },
        'base-process-python3': { provisioner: 'process', spawner: 'python3', cli: BASELINE },
        'base-pool': { provisioner: 'pool', cli: BASELINE },
      }),
};
const PEER_PASSES = 3;
/** How bare-start.mjs starts the helper (see there). */
const BARE_METHODS = ['simple', 'product', 'python3'];
/** flows of the limit / naive / product comparison */
const COMPARE_FLOWS = ['plain', 'jwt', 'ed25519'];
const sizes = quick ? [1000] : [1000, 10_000];
/** sizes of the limit / naive / product comparison (--full adds one pass at 50,000) */
const compareSizes = quick ? [1000] : full ? [1000, 10_000, 50_000] : [1000, 10_000];

/** Scenario definitions: id, how many passes, what to run. */
function scenarios() {
  const list = [];
  // function and pool back to back at each size, so their ratio is taken under the same load
  for (const flow of ['plain', 'ed25519']) {
    for (const count of sizes) {
      for (const helper of ['function', 'pool']) {
        list.push({
          id: `${flow}/${helper}/${count}`,
          passes: passes(flow === 'plain' ? 2 : count < 10_000 ? 2 : 1),
          spec: {
            kind: 'provision',
            flow,
            helper,
            count,
            workers: helper === 'function' ? KNOBS.functionWorkers : KNOBS.poolWorkers,
            ...(helper === 'pool' ? { poolSize: KNOBS.poolSize } : {}),
            nodesPerConnection: KNOBS.nodesPerConnection,
            timeScale: KNOBS.timeScale,
          },
        });
      }
    }
  }
  // Limit, naive client and product back to back on the same fleet size, so their ratios are taken
  // under the same load; the product as the CLI runs it (helper_mode pool).
  for (const flow of COMPARE_FLOWS) {
    for (const count of compareSizes) {
      const base = {
        flow,
        count,
        workers: KNOBS.compareWorkers,
        nodesPerConnection: KNOBS.nodesPerConnection,
        timeScale: KNOBS.timeScale,
      };
      // ed25519 at 10,000 takes a minute per pass: one by default keeps `npm run bench` under 10 minutes
      const n = passes(count >= 50_000 || (flow === 'ed25519' && count >= 10_000) ? 1 : 2);
      list.push({ id: `compare/${flow}/limit/${count}`, passes: n, spec: { ...base, kind: 'limit' } });
      list.push({ id: `compare/${flow}/naive/${count}`, passes: n, spec: { ...base, kind: 'naive' } });
      // --expose-gc: the heap left after a collection, with every node still held, shows what a node costs
      list.push({
        id: `compare/${flow}/pool/${count}`,
        passes: n,
        gc: true,
        spec: { ...base, kind: 'provision', helper: 'pool', poolSize: KNOBS.poolSize, poolDepth: KNOBS.poolDepth },
      });
    }
  }
  // The one-process-per-node runs are bracketed by the helper's bare start rate, measured just
  // before and after with no provisioner, so their ratio is taken under the same machine load.
  const processRun = (flow) => ({
    id: `${flow}/process/${KNOBS.processCount}`,
    passes: passes(2),
    spec: {
      kind: 'provision',
      flow,
      helper: 'process',
      count: KNOBS.processCount,
      workers: KNOBS.processWorkers,
      nodesPerConnection: KNOBS.nodesPerConnection,
      timeScale: KNOBS.timeScale,
    },
  });
  const bareConcurrent = ['simple', 'product', 'python3'].map((method) => ({
    method,
    concurrency: KNOBS.processWorkers,
    count: KNOBS.bareCount,
  }));
  list.push({
    id: 'bare-start',
    passes: passes(2),
    bare: { runs: [{ method: 'product', concurrency: 1, count: KNOBS.bareSequentialCount }, ...bareConcurrent] },
  });
  list.push(processRun('plain'));
  list.push({ id: 'bare-start-after', passes: passes(2), bare: { runs: bareConcurrent } });
  list.push(processRun('ed25519'));
  list.push({
    id: `discovery/${quick ? 1000 : KNOBS.discoveryCount}`,
    passes: 1,
    spec: {
      kind: 'discovery',
      flow: 'plain',
      count: quick ? 1000 : KNOBS.discoveryCount,
      repeat: 5,
      nodesPerConnection: KNOBS.nodesPerConnection,
      timeScale: KNOBS.timeScale,
    },
  });
  // Active/active: one instance, then three, of one site on the same fleet, I/O-bound helper
  for (const instances of [1, 3]) {
    list.push({
      id: `active-active/${instances}`,
      passes: passes(2),
      spec: {
        kind: 'active-active',
        instances,
        count: KNOBS.activeActiveCount,
        workers: 4,
        delayMs: 200,
        heartbeat: '250ms',
        nodesPerConnection: KNOBS.nodesPerConnection,
        timeScale: KNOBS.timeScale,
      },
    });
  }
  // The pool with its default size and depth, and a helper that waits 200 ms per node (a CA, a
  // CMDB): 4 workers should keep 4 helper runs in flight, ~30 s for 600 nodes
  list.push({
    id: `pool-wait/${KNOBS.activeActiveCount}`,
    passes: passes(2),
    spec: {
      kind: 'active-active',
      instances: 1,
      poolDefaults: true,
      count: KNOBS.activeActiveCount,
      workers: 4,
      delayMs: 200,
      heartbeat: '250ms',
      nodesPerConnection: KNOBS.nodesPerConnection,
      timeScale: KNOBS.timeScale,
    },
  });
  // The node history: the same plain flow with the history in memory and in the broker's bucket,
  // side by side; then the bucket and memory figures of a large fleet's records
  for (const history of ['memory', 'kv']) {
    list.push({
      id: `history/${history}/${KNOBS.historyFlowCount}`,
      passes: passes(2),
      spec: {
        kind: 'provision',
        flow: 'plain',
        helper: 'pool',
        poolSize: KNOBS.poolSize,
        poolDepth: KNOBS.poolDepth,
        history,
        count: KNOBS.historyFlowCount,
        workers: KNOBS.compareWorkers,
        nodesPerConnection: KNOBS.nodesPerConnection,
        timeScale: KNOBS.timeScale,
      },
    });
  }
  list.push({
    id: `history-scale/${KNOBS.historyScaleCount}`,
    passes: 1,
    gc: true,
    spec: { kind: 'history-scale', count: KNOBS.historyScaleCount },
  });
  list.push({
    id: `nodes-page/${KNOBS.historyScaleCount}`,
    passes: 1,
    spec: {
      kind: 'nodes-page',
      flow: 'plain',
      count: KNOBS.historyScaleCount,
      workers: KNOBS.functionWorkers,
      repeat: 5,
    },
  });
  // Beside the upstream Go provisioner: the same fleet, flow, workers and helper output, every
  // provisioner (and the helper-less client) spawned as its own process (bench/peer.mjs); the
  // process helper's bare start rate at the same concurrency first, as it bounds the
  // one-process-per-node runs
  const peerBase = {
    kind: 'peer',
    count: KNOBS.peerCount,
    workers: KNOBS.peerWorkers,
    nodesPerConnection: KNOBS.nodesPerConnection,
    timeScale: KNOBS.timeScale,
  };
  list.push({
    id: 'peer/bare-start',
    passes: passes(PEER_PASSES),
    bare: { runs: BARE_METHODS.map((method) => ({ method, concurrency: KNOBS.peerWorkers, count: KNOBS.peerCount })) },
  });
  for (const [who, spec] of Object.entries(PEERS)) {
    list.push({
      id: `peer/jwt/${who}/${KNOBS.peerCount}`,
      passes: passes(PEER_PASSES),
      spec: { ...peerBase, ...spec },
    });
  }
  list.push({
    id: `queue/${KNOBS.queueCount}`,
    passes: 1,
    spec: { kind: 'queue', flow: 'plain', count: KNOBS.queueCount, workers: KNOBS.functionWorkers },
    gc: true,
  });
  return list.filter(
    (s) => only.length === 0 || only.some((o) => s.id === o || s.id.startsWith(`${o}/`) || s.id.startsWith(o)),
  );
}

function runChild(args, env = process.env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => {
      if (err.length < 20_000) err += d;
    });
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH-RESULT '));
      if (code !== 0 || line === undefined)
        reject(new Error(`${args.slice(-2, -1)} exited with ${code}: ${err.trim()}`));
      else resolve({ result: JSON.parse(line.slice('BENCH-RESULT '.length)), stderr: err.trim() });
    });
  });
}

async function runOne(sc, ctx) {
  const nodeArgs = [];
  let env = process.env;
  if (profileDir !== undefined) {
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${join(profileDir, sc.id.replace(/\//g, '-'))}`);
    env = {
      ...process.env,
      BENCH_SIMULATOR_NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(profileDir, `${sc.id.replace(/\//g, '-')}-simulator`)}`,
      // the CLIs a peer or active-active scenario spawns
      BENCH_PROVISIONER_NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(profileDir, `${sc.id.replace(/\//g, '-')}-provisioner`)}`,
    };
  }
  if (sc.bare !== undefined)
    return await runChild([...nodeArgs, join(HERE, 'bare-start.mjs'), JSON.stringify(sc.bare)], env);
  if (sc.gc === true) nodeArgs.push('--expose-gc');
  const spec = { ...sc.spec, url: ctx.nats.url, natsPid: ctx.nats.pid, keys: ctx.keys };
  return await runChild([...nodeArgs, join(HERE, 'scenario.mjs'), JSON.stringify(spec)], env);
}

function machineInfo() {
  const natsVersion = (() => {
    try {
      return execFileSync(process.env.NATS_SERVER_BIN ?? 'nats-server', ['--version'], {
        encoding: 'utf8',
        env: natsEnv(),
      }).trim();
    } catch {
      return 'unknown';
    }
  })();
  return {
    cpu: `${cpus().length} x ${cpus()[0]?.model ?? 'unknown'}`,
    memoryGb: Math.round(totalmem() / 1e9),
    node: process.version,
    openssl: process.versions.openssl,
    nats: natsVersion,
    kernel: (() => {
      try {
        return execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim();
      } catch {
        return 'unknown';
      }
    })(),
  };
}

function log(text) {
  process.stderr.write(`${text}\n`);
}

async function main() {
  const saved = arg('--report', undefined);
  if (saved !== undefined) {
    // print the report of an earlier run again (e.g. after the report gained a line)
    const { info, results, elapsedMs } = JSON.parse(readFileSync(saved, 'utf8'));
    process.stdout.write(buildReport(scenarios(), new Map(Object.entries(results)), info, elapsedMs ?? 0).text);
    return;
  }
  const started = Date.now();
  const info = machineInfo();
  log(`choria-provisioner benchmark: ${info.cpu}, ${info.memoryGb} GB, node ${info.node}, ${info.nats}`);
  const nats = await startNatsServer();
  const keys = makeIssuerKeys();
  const ctx = { nats, keys };
  let list = scenarios();
  const upstreamId = `peer/jwt/upstream/${KNOBS.peerCount}`;
  if (list.some((s) => s.id === upstreamId) && !existsSync(upstreamBinary())) {
    log(
      `upstream Go provisioner not found at ${upstreamBinary()} (set CHORIA_LAB_DIR): ${upstreamId} skipped, everything else runs`,
    );
    list = list.filter((s) => s.id !== upstreamId);
  }
  const results = new Map(list.map((s) => [s.id, []]));
  /** passes that failed to run at all, reported with the problems */
  const crashed = [];
  const maxPasses = Math.max(...list.map((s) => s.passes));
  try {
    for (let pass = 1; pass <= maxPasses; pass++) {
      for (const sc of list) {
        if (pass > sc.passes) continue;
        const t = Date.now();
        try {
          const { result, stderr } = await runOne(sc, ctx);
          results.get(sc.id).push({ ...result, pass });
          if (stderr !== '') log(`  ${sc.id}: stderr: ${stderr.slice(0, 500)}`);
          log(`pass ${pass} ${sc.id}: ${summaryLine(result)} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
        } catch (err) {
          log(`pass ${pass} ${sc.id}: FAILED: ${err.message}`);
          crashed.push(`${sc.id} pass ${pass}: ${err.message.split('\n')[0]}`);
        }
      }
    }
  } finally {
    await nats.stop();
  }
  const report = buildReport(list, results, info, Date.now() - started, crashed);
  writeFileSync(
    outFile,
    JSON.stringify(
      { info, knobs: KNOBS, elapsedMs: Date.now() - started, results: Object.fromEntries(results), report },
      null,
      2,
    ),
  );
  process.stdout.write(report.text);
  process.stdout.write(`\nraw results: ${outFile}\n`);
}

function summaryLine(r) {
  if (r.kind === 'provision') {
    const ok =
      r.provisioned === r.count && r.failed === 0 && r.sim.violations === 0
        ? ''
        : ` PROBLEMS: provisioned ${r.provisioned}/${r.count}, failed ${r.failed}, violations ${r.sim.violations} ${r.firstErrors.join(' | ')}`;
    return `${fmt.int(r.nodesPerMin)} nodes/min, p50 ${fmt.ms(r.p50Ms)}, p99 ${fmt.ms(r.p99Ms)}, peak RSS ${fmt.mb(r.peakRssMb)}, background ${r.backgroundCores.toFixed(2)} cores${ok}`;
  }
  if (r.kind === 'peer') {
    const ok =
      r.provisioned === r.count && r.sim.violations === 0
        ? ''
        : ` PROBLEMS: provisioned ${r.provisioned}/${r.count}, violations ${r.sim.violations}`;
    return `${fmt.int(r.nodesPerMin)} nodes/min first request to last restart, ${fmt.s(r.spawnToLastMs)} from spawn, CPU ${((r.cpuS * 1000) / r.count).toFixed(2)} + helpers ${((r.helperCpuS * 1000) / r.count).toFixed(2)} ms per node, peak RSS ${fmt.mb(r.peakRssMb)}${ok}`;
  }
  if (r.kind === 'bare-start')
    return r.results
      .map(
        (x) =>
          `${x.method}, ${x.concurrency} at a time: ${fmt.int(x.startsPerMin)} starts/min, background ${x.backgroundCores.toFixed(2)} cores`,
      )
      .join('; ');
  if (r.kind === 'discovery') return r.runs.map((x) => `${x.found} in ${fmt.ms(x.ms)}`).join(', ');
  if (r.kind === 'nodes-page') {
    return `${fmt.int(r.count)} nodes listed: /status counts ${fmt.ms(r.statusCountsMs)}, /nodes by identity ${fmt.ms(r.byIdentityMs)}, last page by last change ${fmt.ms(r.byUpdatedDescLastPageMs)}, filtered ${fmt.ms(r.filteredMs)}, searched ${fmt.ms(r.searchedMs)}; a page is ${fmt.int(r.pageBytes)} bytes`;
  }
  if (r.kind === 'history-scale') {
    return `${fmt.int(r.count)} records: written at ${fmt.int(r.write.perSecond)}/s (${r.write.cpuUsPerRecord.toFixed(0)} us CPU each), bucket ${fmt.mb(r.bucketBytes / 1048576)} (${r.bytesPerRecord.toFixed(0)} B each), after rewriting all ${fmt.mb(r.bucketBytesAfterRewrite / 1048576)}, loaded by a new instance in ${fmt.s(r.loadMs)}, ${r.heapBytesPerRecord.toFixed(0)} B heap each`;
  }
  if (r.kind === 'active-active') {
    // ms from spawning: first log line / membership settled / first node started / finished, per instance
    const startup = (r.startup ?? [])
      .map((i) =>
        [i.firstLineMs, i.settledMs, i.firstStartedMs, i.firstFinishedMs]
          .map((v) => (v === undefined ? '-' : String(v)))
          .join('/'),
      )
      .join(', ');
    // CPU ms used in the first 1 s and 2 s after spawning, by kind of process (the machine has 2,000 ms a second on two cores)
    const marks = r.startUpCpu ?? [];
    // the kinds in the order bench/active-active.mjs startUpCpu() lists them
    const kinds = marks.length === 0 ? [] : Object.keys(marks[0]).filter((k) => k !== 'at');
    const cpu =
      marks.length === 0
        ? ''
        : `; start-up CPU ms at ${marks.map((m) => `${m.at / 1000} s`).join('/')}: ${kinds.map((k) => `${k} ${marks.map((m) => m[k]).join('/')}`).join(', ')}`;
    return `${r.instances} instance(s): ${r.provisioned}/${r.count} nodes in ${fmt.s(r.ms)}, ${r.helperRunsPerNode.toFixed(3)} helper runs per node, max ${r.maxConfiguredPerCycle} configure per node, ${r.lockRefusals} lock refusals; start-up (ms: first line/settled/first node started/finished) ${startup}${cpu}`;
  }
  if (r.kind === 'queue')
    return `${r.offered} offered, ${r.queued} queued: RSS ${fmt.mb(r.rssBeforeMb)} -> ${fmt.mb(r.rssAfterMb)}`;
  return JSON.stringify(r);
}

function pad(cells, widths) {
  return cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
}

/**
 * Beside the upstream Go provisioner (peer/*): medians per provisioner, the ratios to upstream
 * and to the helper-less client pass by pass (runs of one pass side by side), and the bare start
 * rate of the process helper.
 */
function peerReport(results) {
  const lines = [];
  const targets = [];
  const runs = (who) => results.get(`peer/jwt/${who}/${KNOBS.peerCount}`) ?? [];
  const who = Object.keys(PEERS).filter((w) => runs(w).length > 0);
  if (who.length === 0) return { lines, targets };
  const W = KNOBS.peerWorkers;
  lines.push('');
  lines.push(
    `Beside the upstream Go provisioner: jwt flow, ${fmt.int(KNOBS.peerCount)} nodes, ${W} workers, each spawned as a process (medians of passes)`,
  );
  const widths = [15, 4, 10, 9, 20, 6, 6, 7, 6, 6, 6, 9, 9, 5];
  lines.push(
    pad(
      [
        '',
        'runs',
        'nodes/min',
        'spawn→end',
        'per pass (k/min)',
        'prov',
        'phase',
        'helpers',
        'total',
        'nats',
        'sim',
        'peak RSS',
        'help RSS',
        'bg',
      ],
      widths,
    ),
  );
  const m = (rs, f) => median(rs.map(f));
  for (const w of who) {
    const rs = runs(w);
    lines.push(
      pad(
        [
          w,
          rs.length,
          fmt.int(m(rs, (r) => r.nodesPerMin)),
          fmt.s(m(rs, (r) => r.spawnToLastMs)),
          rs.map((r) => (r.nodesPerMin / 1000).toFixed(1)).join(' '),
          m(rs, (r) => (r.cpuS * 1000) / r.count).toFixed(2),
          m(rs, (r) => (r.phaseCpuS * 1000) / r.count).toFixed(2),
          m(rs, (r) => (r.helperCpuS * 1000) / r.count).toFixed(2),
          m(rs, (r) => ((r.cpuS + r.helperCpuS) * 1000) / r.count).toFixed(2),
          m(rs, (r) => (r.natsCpuS * 1000) / r.count).toFixed(2),
          m(rs, (r) => (r.simCpuS * 1000) / r.count).toFixed(2),
          fmt.mb(m(rs, (r) => r.peakRssMb)),
          fmt.mb(m(rs, (r) => r.helpersPeakRssMb)),
          m(rs, (r) => r.backgroundCores).toFixed(2),
        ],
        widths,
      ),
    );
  }
  lines.push(
    'nodes/min: nodes over the time from the first request the fleet received (its discovery excluded) to the',
  );
  lines.push(
    'last restart received, as seen by polling the simulator every 25 ms; spawn→end: from spawning the process',
  );
  lines.push(
    'to the last restart. CPU ms per node: prov = the process from spawn (start-up included), phase = the same',
  );
  lines.push(
    'from the first request on, helpers = every process under it (helpers, the helper spawner), total = prov +',
  );
  lines.push(
    'helpers; nats, sim: nats-server and the simulator answering it, from spawn. Peak RSS: VmHWM of the process;',
  );
  lines.push(
    'help RSS: sum of VmHWM of its live descendants at the end (pool helpers, the helper spawner). bg: other load, in cores.',
  );
  const byPass = (rs, pass) => rs.find((r) => r.pass === pass);
  const x = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : '-');
  /** a over b, nodes/min pass by pass */
  const ratios = (a, b) =>
    runs(a)
      .map((r) => r.nodesPerMin / (byPass(runs(b), r.pass)?.nodesPerMin ?? NaN))
      .filter(Number.isFinite);
  const ratioLine = (a, b) => {
    const rs = ratios(a, b);
    return rs.length === 0
      ? undefined
      : { median: median(rs), text: `${x(median(rs))} (per pass: ${rs.map(x).join(', ')})` };
  };
  for (const [a, b] of [
    ['process', 'upstream'],
    ['pool', 'upstream'],
    ['process-python3', 'upstream'],
    ['process-none', 'upstream'],
    ['client', 'upstream'],
    ['process-python3', 'process'],
    ['process-none', 'process'],
    ['pool', 'process'],
    ['client', 'process'],
    ['client', 'pool'],
    ['process', 'base-process'],
    ['process-python3', 'base-process-python3'],
    ['pool', 'base-pool'],
  ]) {
    const r = ratioLine(a, b);
    if (r !== undefined) lines.push(`${a}/${b}: nodes/min ${r.text}`);
  }
  for (const mine of ['process', 'pool']) {
    const r = ratioLine(mine, 'upstream');
    if (r === undefined) continue;
    const label = mine === 'process' ? 'helper_mode process (one helper process per node)' : 'helper_mode pool';
    targets.push([
      `jwt flow, ${fmt.int(KNOBS.peerCount)} nodes, ${W} workers: ${label} vs the upstream Go provisioner, nodes/min first request to last restart`,
      `${fmt.int(m(runs(mine), (r) => r.nodesPerMin))} vs ${fmt.int(m(runs('upstream'), (r) => r.nodesPerMin))}, ${r.text}`,
      '>= 3x',
      r.median >= 3,
    ]);
  }
  const bare = results.get('peer/bare-start') ?? [];
  if (bare.length > 0) {
    const rate = (r, method) => r?.results.find((y) => y.method === method && y.concurrency === W)?.startsPerMin ?? NaN;
    const cpu = (method, f) =>
      median(bare.flatMap((r) => r.results.filter((y) => y.method === method && y.concurrency === W)).map(f)).toFixed(
        2,
      );
    const methods = BARE_METHODS.filter((method) => bare.some((r) => Number.isFinite(rate(r, method))));
    lines.push(
      `Bare start rate of the same process helper (bench/helpers/trivial-helper.sh, ${fmt.int(KNOBS.peerCount)} runs ${W} at a time, no provisioner, medians):`,
    );
    for (const method of methods) {
      lines.push(
        `  ${method}: ${fmt.int(median(bare.map((r) => rate(r, method))))}/min (per pass: ${bare.map((r) => fmt.int(rate(r, method))).join(', ')}; CPU per start: parent ${cpu(method, (y) => y.parentCpuMsPerStart)} ms, helper ${cpu(method, (y) => y.helperCpuMsPerStart)} ms)`,
      );
    }
  }
  return { lines, targets };
}

function buildReport(list, results, info, elapsedMs, crashed = []) {
  const lines = [];
  const med = (id, f) => median((results.get(id) ?? []).map(f));
  lines.push('');
  lines.push(
    `Machine: ${info.cpu}, ${info.memoryGb} GB RAM, kernel ${info.kernel}, node ${info.node}, OpenSSL ${info.openssl}, ${info.nats}`,
  );
  lines.push(`Knobs: ${JSON.stringify(KNOBS)}`);
  lines.push('');
  const widths = [28, 4, 10, 8, 8, 8, 6, 6, 6, 6, 8, 7];
  const tabled = list.some((sc) => ['provision', 'naive', 'limit'].includes(sc.spec?.kind));
  if (tabled)
    lines.push(
      pad(
        [
          'scenario (flow/helper/nodes)',
          'runs',
          'nodes/min',
          'p50',
          'p99',
          'peak RSS',
          'prov',
          'sim',
          'nats',
          'help',
          'disc.',
          'bg',
        ],
        widths,
      ),
    );
  for (const sc of list) {
    const rs = results.get(sc.id) ?? [];
    if (!['provision', 'naive', 'limit'].includes(sc.spec?.kind)) continue;
    const perNode = (f) => med(sc.id, (r) => (f(r) * 1000) / r.count).toFixed(2);
    lines.push(
      pad(
        [
          sc.id,
          rs.length,
          fmt.int(med(sc.id, (r) => r.nodesPerMin)),
          fmt.ms(med(sc.id, (r) => r.p50Ms)),
          fmt.ms(med(sc.id, (r) => r.p99Ms)),
          fmt.mb(med(sc.id, (r) => r.peakRssMb)),
          perNode((r) => r.cpuS),
          perNode((r) => r.simCpuS),
          perNode((r) => r.natsCpuS),
          perNode((r) => r.helperCpuS),
          fmt.ms(med(sc.id, (r) => r.discoveryMs)),
          med(sc.id, (r) => r.backgroundCores).toFixed(2),
        ],
        widths,
      ),
    );
  }
  if (tabled) {
    lines.push(
      'p50/p99: time per node (the Host attempt: every RPC and the helper). prov/sim/nats/help: CPU ms per node',
    );
    lines.push('of the provisioner process, the simulator, nats-server and the helper processes (incl. the helper');
    lines.push('spawner); disc.: start() until the first discovery returned; bg: other load on the machine, in cores.');
  }
  const problems = [...results.entries()].flatMap(([id, rs]) =>
    rs
      .filter(
        (r) =>
          (r.kind === 'provision' || r.kind === 'peer') &&
          (r.provisioned !== r.count || r.failed > 0 || r.sim.violations > 0),
      )
      .map((r) => `${id}: provisioned ${r.provisioned}/${r.count}, failed ${r.failed}, violations ${r.sim.violations}`),
  );
  problems.push(...crashed.map((c) => `did not run: ${c}`));
  lines.push(
    problems.length === 0
      ? 'Every run: all nodes provisioned exactly as the simulator expects (0 failures, 0 protocol violations).'
      : `PROBLEMS:\n  ${problems.join('\n  ')}`,
  );

  // Limit / naive / product, per flow and size: ratios taken pass by pass (runs side by side)
  const compareTargets = [];
  for (const flow of COMPARE_FLOWS) {
    for (const count of compareSizes) {
      const runs = (who) => results.get(`compare/${flow}/${who}/${count}`) ?? [];
      const [limit, naive, pool] = [runs('limit'), runs('naive'), runs('pool')];
      if (pool.length === 0) continue;
      const rate = (r) => r?.phaseNodesPerMin ?? NaN;
      const cpuMs = (r) => ((r?.cpuS ?? NaN) * 1000) / (r?.count ?? NaN);
      const paired = (other) => pool.map((r, i) => rate(r) / rate(other[i])).filter(Number.isFinite);
      const range = (xs) =>
        xs.length === 0 ? 'n/a' : `${fmt.pct(median(xs))} (${fmt.pct(Math.min(...xs))}-${fmt.pct(Math.max(...xs))})`;
      if (count === compareSizes[0]) {
        lines.push('');
        lines.push(
          `${flow} flow: limit / naive client / product (CLI, helper_mode pool, ${KNOBS.poolSize} processes, depth ${KNOBS.poolDepth}), ${KNOBS.compareWorkers} nodes at a time, RPC phase nodes/min (median of passes) and CPU ms per node`,
        );
        lines.push(
          pad(
            [
              'nodes',
              'limit',
              'naive',
              'product',
              'prod/limit',
              'prod/naive',
              'cpu L',
              'cpu N',
              'cpu P',
              'P sim',
              'P nats',
              'P help',
            ],
            [7, 9, 9, 9, 22, 22, 6, 6, 6, 6, 6, 6],
          ),
        );
      }
      const m = (rs, f) => median(rs.map(f));
      const perNode = (rs, f) => m(rs, (r) => (f(r) * 1000) / r.count).toFixed(2);
      lines.push(
        pad(
          [
            fmt.int(count),
            fmt.int(m(limit, rate)),
            fmt.int(m(naive, rate)),
            fmt.int(m(pool, rate)),
            range(paired(limit)),
            range(paired(naive)),
            m(limit, cpuMs).toFixed(2),
            m(naive, cpuMs).toFixed(2),
            m(pool, cpuMs).toFixed(2),
            perNode(pool, (r) => r.simCpuS),
            perNode(pool, (r) => r.natsCpuS),
            perNode(pool, (r) => r.helperCpuS),
          ],
          [7, 9, 9, 9, 22, 22, 6, 6, 6, 6, 6, 6],
        ),
      );
      if (count === 10_000) {
        compareTargets.push([
          `${flow} flow, product vs naive client, 10,000 nodes`,
          range(paired(naive)),
          '>= 120%',
          median(paired(naive)) >= 1.2,
        ]);
        compareTargets.push([
          `${flow} flow, product vs limit, 10,000 nodes`,
          range(paired(limit)),
          '>= 80%',
          median(paired(limit)) >= 0.8,
        ]);
        const pc = m(pool, cpuMs);
        const nc = m(naive, cpuMs);
        compareTargets.push([
          `${flow} flow, provisioner CPU per node vs the naive client's, 10,000 nodes`,
          `${pc.toFixed(2)} vs ${nc.toFixed(2)} ms`,
          '<=',
          pc <= nc,
        ]);
      }
    }
  }
  // ed25519 against the plain flow, and how CPU and memory per node change with the fleet size
  const productRuns = (flow, count) => results.get(`compare/${flow}/pool/${count}`) ?? [];
  const edRate = median(productRuns('ed25519', 10_000).map((r) => r.phaseNodesPerMin));
  const plainRate = median(productRuns('plain', 10_000).map((r) => r.phaseNodesPerMin));
  if (Number.isFinite(edRate) && Number.isFinite(plainRate)) {
    const edCpu = median(productRuns('ed25519', 10_000).map((r) => (r.cpuS * 1000) / r.count));
    compareTargets.push([
      'ed25519 flow vs the plain flow, product, 10,000 nodes',
      `${fmt.int(edRate)} vs ${fmt.int(plainRate)} nodes/min, ${fmt.pct(edRate / plainRate)}`,
      '>= 50%',
      edRate / plainRate >= 0.5,
    ]);
    compareTargets.push([
      'ed25519 flow, provisioner CPU per node, 10,000 nodes',
      `${edCpu.toFixed(2)} ms`,
      '<= 1.00 ms',
      edCpu <= 1,
    ]);
  }
  const largest = compareSizes[compareSizes.length - 1];
  // the issue asks for 1,000 to 50,000 (--full): between 1,000 and 10,000 start-up effects dominate
  if (largest >= 50_000) {
    for (const flow of COMPARE_FLOWS) {
      const at = (count, f) => median(productRuns(flow, count).map(f));
      const cpu = (count) => at(count, (r) => (r.cpuS * 1000) / r.count);
      const rss = (count) => at(count, (r) => r.peakRssMb);
      if (!Number.isFinite(cpu(largest))) continue;
      const heap = (count) => at(count, (r) => r.heapAfterGcMb ?? NaN);
      const rssKb = ((rss(largest) - rss(compareSizes[0])) * 1024) / (largest - compareSizes[0]);
      const heapKb = ((heap(largest) - heap(compareSizes[0])) * 1024) / (largest - compareSizes[0]);
      compareTargets.push([
        `${flow} flow, product CPU and memory per node from ${fmt.int(compareSizes[0])} to ${fmt.int(largest)} nodes`,
        `CPU ${compareSizes.map((c) => cpu(c).toFixed(2)).join(' / ')} ms; heap after GC ${compareSizes.map((c) => fmt.mb(heap(c))).join(' / ')} ` +
          `(+${heapKb.toFixed(2)} KB per node, every node still held), peak RSS ${compareSizes.map((c) => fmt.mb(rss(c))).join(' / ')} (+${rssKb.toFixed(1)} KB per node)`,
        'CPU per node not rising; retained heap <= 0.5 KB per held node',
        cpu(largest) <= cpu(compareSizes[0]) * 1.1 && heapKb <= 0.5,
      ]);
    }
  }
  if (compareTargets.length > 0)
    lines.push(
      '(limit: pre-built requests over a bare connection; naive: nats.js alone, JSON.stringify/parse per layer, one RPC after the other per worker; both without helper or checks. Ratios pass by pass: median (min-max).)',
    );

  const bare = results.get('bare-start') ?? [];
  const after = results.get('bare-start-after') ?? [];
  const startRate = (r, method, c) =>
    r?.results.find((x) => x.method === method && x.concurrency === c)?.startsPerMin ?? NaN;
  const W = KNOBS.processWorkers;
  const bareSeq = median(bare.map((r) => startRate(r, 'product', 1)));
  const bareMedian = (method) => median([...bare, ...after].map((r) => startRate(r, method, W)));
  // per pass: the one-process-per-node rate over the bare rate measured just before and after it
  const procRuns = results.get(`plain/process/${KNOBS.processCount}`) ?? [];
  const procRatios = (method) =>
    procRuns
      .map((r, i) => r.nodesPerMin / median([startRate(bare[i], method, W), startRate(after[i], method, W)]))
      .filter(Number.isFinite);
  if (bare.length > 0) {
    lines.push('');
    const cpu = (method, f) =>
      median(
        [...bare, ...after].flatMap((r) => r.results.filter((x) => x.method === method && x.concurrency === W)).map(f),
      ).toFixed(2);
    const describe = (method) =>
      `${fmt.int(bareMedian(method))}/min ${W} at a time (CPU per start: parent ${cpu(method, (x) => x.parentCpuMsPerStart)} ms, helper ${cpu(method, (x) => x.helperCpuMsPerStart)} ms)`;
    lines.push(
      `Helper bare start rate (${KNOBS.bareCount} runs of bench/helpers/trivial-helper.sh, no provisioner, before and after each plain one-process-per-node run; medians):`,
    );
    lines.push(`  simple (plain Node parent, default spawn options): ${describe('simple')}`);
    lines.push(
      `  product's Node method (own process group, three pipes; the fallback spawner): ${describe('product')}; one at a time ${fmt.int(bareSeq)}/min`,
    );
    lines.push(`  product's default spawner alone (spawner-child.py, posix_spawn): ${describe('python3')}`);
  }
  const peer = peerReport(results);
  lines.push(...peer.lines);
  const disc = [...results.entries()].find(([id]) => id.startsWith('discovery/'))?.[1]?.[0];
  if (disc !== undefined) {
    lines.push(
      `Discovery of ${disc.count} nodes (ChoriaClient.discover, includes the ${disc.windowMs} ms quiet window that ends it): ${disc.runs.map((x) => `${fmt.ms(x.ms)} (${x.found})`).join(', ')}; median ${fmt.ms(median(disc.runs.map((x) => x.ms)))}`,
    );
  }
  const queue = [...results.entries()].find(([id]) => id.startsWith('queue/'))?.[1]?.[0];
  if (queue !== undefined) {
    lines.push(
      `${queue.offered} hosts offered, ${queue.queued} waiting in the queue (+${queue.busy} in flight to nodes that never answer): RSS ${fmt.mb(queue.rssBeforeMb)} before, ${fmt.mb(queue.rssAfterMb)} after (peak ${fmt.mb(queue.peakRssMb)}, heap +${fmt.mb(queue.heapDeltaMb)})`,
    );
  }

  // Targets
  lines.push('');
  lines.push('Targets:');
  const target = (name, value, goal, ok) =>
    lines.push(`  ${ok ? 'MET    ' : 'NOT MET'} ${name}: ${value} (target ${goal})`);
  const fn10k = med('plain/function/10000', (r) => r.nodesPerMin);
  const pool10k = med('plain/pool/10000', (r) => r.nodesPerMin);
  if (Number.isFinite(fn10k))
    target('plain flow, in-process helper, 10,000 nodes', `${fmt.int(fn10k)} nodes/min`, '>= 60,000', fn10k >= 60_000);
  if (Number.isFinite(pool10k) && Number.isFinite(fn10k)) {
    const fnRuns = results.get('plain/function/10000') ?? [];
    const poolRatios = (results.get('plain/pool/10000') ?? []).map(
      (r, i) => r.nodesPerMin / (fnRuns[i]?.nodesPerMin ?? NaN),
    );
    const ratio = median(poolRatios);
    target(
      'plain flow, helper pool vs in-process, 10,000 nodes',
      `${fmt.int(pool10k)} vs ${fmt.int(fn10k)} nodes/min, ${fmt.pct(ratio)} (per pass: ${poolRatios.map((x) => fmt.pct(x)).join(', ')})`,
      '>= 80%',
      ratio >= 0.8,
    );
  }
  const proc = med(`plain/process/${KNOBS.processCount}`, (r) => r.nodesPerMin);
  const simpleRatios = procRatios('simple');
  if (Number.isFinite(proc) && simpleRatios.length > 0) {
    const productRatios = procRatios('product');
    const pythonRatios = procRatios('python3');
    target(
      `plain flow, one process per node (${KNOBS.processCount} nodes, ${W} workers) vs the simple bare start rate around it`,
      `${fmt.int(proc)} nodes/min, ${fmt.pct(median(simpleRatios))} (per pass: ${simpleRatios.map((x) => fmt.pct(x)).join(', ')}; vs the product's Node method: ${productRatios.map((x) => fmt.pct(x)).join(', ')}; vs its Python spawner alone: ${pythonRatios.map((x) => fmt.pct(x)).join(', ')})`,
      '>= 80%',
      median(simpleRatios) >= 0.8,
    );
  }
  if (disc !== undefined) {
    const d = median(disc.runs.map((x) => x.ms));
    target(
      `discovery of ${disc.count} nodes`,
      fmt.s(d),
      '<= 3 s',
      d <= 3000 && disc.runs.every((x) => x.found === disc.count),
    );
  }
  if (queue !== undefined)
    target(`RSS with ${queue.offered} hosts waiting`, fmt.mb(queue.rssAfterMb), '<= 300 MB', queue.rssAfterMb <= 300);
  for (const [name, value, goal, ok] of compareTargets) target(name, value, goal, ok);
  const single = results.get('active-active/1') ?? [];
  const triple = results.get('active-active/3') ?? [];
  if (single.length > 0 && triple.length > 0) {
    const ratios = triple.map((r, i) => (single[i]?.ms ?? NaN) / r.ms).filter(Number.isFinite);
    const phaseRatios = triple
      .map((r, i) => r.phaseNodesPerMin / (single[i]?.phaseNodesPerMin ?? NaN))
      .filter(Number.isFinite);
    const runsPerNode = Math.max(...triple.map((r) => r.helperRunsPerNode));
    const once = triple.every((r) => r.provisioned === r.count && r.maxConfiguredPerCycle === 1);
    const x = (v) => `${v.toFixed(2)}x`;
    target(
      `active/active, 3 instances vs 1 (${KNOBS.activeActiveCount} nodes, 4 workers each, 200 ms helper), from spawning the processes`,
      `${fmt.s(median(single.map((r) => r.ms)))} vs ${fmt.s(median(triple.map((r) => r.ms)))}, ${x(median(ratios))} (per pass: ${ratios.map(x).join(', ')}); ` +
        `provisioning phase ${x(median(phaseRatios))} (per pass: ${phaseRatios.map(x).join(', ')}); helper runs per node <= ${runsPerNode.toFixed(3)}; ${once ? 'every node configured once' : 'A NODE WAS CONFIGURED TWICE OR NOT AT ALL'}`,
      '>= 2.8x, <= 1.05 runs per node, each node once',
      median(ratios) >= 2.8 && runsPerNode <= 1.05 && once,
    );
  }
  const poolWait = results.get(`pool-wait/${KNOBS.activeActiveCount}`) ?? [];
  if (poolWait.length > 0) {
    const ms = median(poolWait.map((r) => r.ms));
    const all = poolWait.every((r) => r.provisioned === r.count);
    target(
      `${KNOBS.activeActiveCount} nodes, 4 workers, a pool helper that waits 200 ms, default pool settings, from spawning the process`,
      `${fmt.s(ms)} (per pass: ${poolWait.map((r) => fmt.s(r.ms)).join(', ')})${all ? '' : ' NOT EVERY NODE PROVISIONED'}`,
      '<= 33 s',
      ms <= 33_000 && all,
    );
  }
  const memoryFlow = results.get(`history/memory/${KNOBS.historyFlowCount}`) ?? [];
  const kvFlow = results.get(`history/kv/${KNOBS.historyFlowCount}`) ?? [];
  if (memoryFlow.length > 0 && kvFlow.length > 0) {
    const ratios = kvFlow.map((r, i) => r.nodesPerMin / (memoryFlow[i]?.nodesPerMin ?? NaN)).filter(Number.isFinite);
    const cpu = (rs) => median(rs.map((r) => ((r.cpuS + r.natsCpuS) * 1000) / r.count));
    target(
      `plain flow at ${fmt.int(KNOBS.historyFlowCount)}, history in the bucket vs in memory`,
      `${fmt.int(median(kvFlow.map((r) => r.nodesPerMin)))} vs ${fmt.int(median(memoryFlow.map((r) => r.nodesPerMin)))} nodes/min, ${median(ratios).toFixed(2)}x (per pass: ${ratios.map((x) => x.toFixed(2)).join(', ')}); provisioner + nats CPU ${cpu(kvFlow).toFixed(2)} vs ${cpu(memoryFlow).toFixed(2)} ms per node`,
      'context (no target)',
      true,
    );
  }
  const scale = (results.get(`history-scale/${KNOBS.historyScaleCount}`) ?? [])[0];
  if (scale !== undefined) {
    target(
      `history of ${fmt.int(scale.count)} nodes: bucket size after writing every record twice`,
      `${fmt.mb(scale.bucketBytes / 1048576)} after one write each, ${fmt.mb(scale.bucketBytesAfterRewrite / 1048576)} (${scale.bucketMessagesAfterRewrite} values) after two`,
      'one value per node, no growth',
      scale.bucketMessagesAfterRewrite === scale.count && scale.bucketBytesAfterRewrite <= scale.bucketBytes * 1.05,
    );
    target(
      `history of ${fmt.int(scale.count)} nodes: memory of an instance that loaded them`,
      `${fmt.mb(scale.heapMb)} heap (${scale.heapBytesPerRecord.toFixed(0)} B per node), loaded in ${fmt.s(scale.loadMs)}`,
      'bounded (context)',
      scale.loadedRecords === scale.count,
    );
  }
  const pages = (results.get(`nodes-page/${KNOBS.historyScaleCount}`) ?? [])[0];
  if (pages !== undefined) {
    const worst = Math.max(
      pages.statusCountsMs,
      pages.byIdentityMs,
      pages.byUpdatedDescLastPageMs,
      pages.filteredMs,
      pages.searchedMs,
    );
    target(
      `status page with ${fmt.int(pages.count)} nodes: slowest /status or /nodes answer (median of 5)`,
      fmt.ms(worst),
      '< 2 s (the page polls every 2 s)',
      worst < 2000,
    );
  }
  for (const [name, value, goal, ok] of peer.targets) target(name, value, goal, ok);
  lines.push('');
  lines.push(`Finished in ${(elapsedMs / 1000).toFixed(0)} s.`);
  return { text: `${lines.join('\n')}\n` };
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err?.stack ?? err}\n`);
  process.exit(1);
});
