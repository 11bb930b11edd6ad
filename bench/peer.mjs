// The peer scenarios: this project's CLI (`choria-provisioner run`, helper_mode process or pool),
// the upstream Go provisioner and the helper-less client (bench/client.mjs), each spawned as its
// own process against the same simulated fleet, with the same flow (jwt: protocol v1 unsigned,
// every node's provisioning JWT fetched; the provisioners verify it), workers and helper output.
// All are measured from the outside the same way:
//   * the simulator's summary is polled every POLL_MS from spawning the process; the time line
//     (ms since spawn, restarts received) is returned for the plot (bench/peer-plot.mjs);
//   * nodes/min = nodes over the time from the first request the fleet received (its discovery
//     excluded) to the last node's `restart` received: start-up and discovery are not in it, nor
//     the restart splay a provisioner asks for (the node's work, not the provisioner's); ms from
//     spawn to the last restart is reported beside it;
//   * CPU of the process (utime + stime from /proc/PID/stat) and, separately, of everything under
//     it: helper processes it reaped (cutime + cstime) and live descendants (the helper spawner,
//     pool helpers and what they reaped), read just before the process is stopped;
//   * peak RSS = VmHWM of the process (and the sum over its live descendants).
// The upstream binary is $CHORIA_LAB_DIR/bin/choria-provisioner (default
// ~/.cache/choria-provisioner-ts/lab); bench/run.mjs leaves the upstream scenario out when it is
// missing.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearTimeout } from 'node:timers';
import { URL, fileURLToPath } from 'node:url';
import { stringify as stringifyYaml } from 'yaml';
import { startSimulator } from './lib/simulator.mjs';
import { childPids, cpuSecondsOf, machineBusySeconds, memoryFromProc, treeCpu } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages', 'cli', 'dist', 'bin.js');
const CLIENT = join(ROOT, 'bench', 'client.mjs');
/**
 * The one-process-per-node helper (upstream and helper_mode process) and its JSON-lines twins for
 * helper_mode pool: `pool` a Perl loop (buffered input, as a long-lived helper is usually written),
 * `pool-sh` a shell loop (whose `read` takes a byte per system call), to show what that costs.
 */
export const PEER_HELPERS = {
  process: join(ROOT, 'bench', 'helpers', 'trivial-helper.sh'),
  pool: join(ROOT, 'bench', 'helpers', 'trivial-pool-helper.pl'),
  'pool-sh': join(ROOT, 'bench', 'helpers', 'trivial-pool-helper.sh'),
};
const helperModeOf = (provisioner) => (provisioner.startsWith('pool') ? 'pool' : provisioner);
const POLL_MS = 25;

/** Where the upstream provisioner is looked for. */
export function upstreamBinary() {
  const lab = process.env.CHORIA_LAB_DIR ?? join(homedir(), '.cache', 'choria-provisioner-ts', 'lab');
  return join(lab, 'bin', 'choria-provisioner');
}

/** Sum of VmHWM of the live descendants of `pid`, in MB. */
function descendantsPeakRssMb(pid) {
  let sum = 0;
  const walk = (p) => {
    for (const c of childPids(p)) {
      try {
        sum += memoryFromProc(c).peakRssMb || 0;
      } catch {
        // gone meanwhile
      }
      walk(c);
    }
  };
  walk(pid);
  return sum;
}

function writeConfigs(dir, s) {
  // BENCH_PROVISIONER_NODE_OPTIONS: e.g. --cpu-prof --cpu-prof-dir=DIR (bench/run.mjs --profile)
  const nodeArgs = (process.env.BENCH_PROVISIONER_NODE_OPTIONS ?? '').split(' ').filter((a) => a !== '');
  if (s.provisioner === 'client') {
    const spec = { url: s.url, flow: 'jwt', workers: s.workers, keys: s.keys };
    return {
      command: process.execPath,
      args: [...nodeArgs, CLIENT, JSON.stringify(spec)],
      version: 'the naive client of bench/drivers.mjs',
    };
  }
  const choria = join(dir, 'choria.cfg');
  writeFileSync(
    choria,
    `identity = bench-peer.example.net\nplugin.choria.middleware_hosts = ${s.url}\nplugin.security.provider = file\n`,
  );
  const common = {
    workers: s.workers,
    interval: '1m', // upstream's minimum; both find the fleet with their start-up discovery
    logfile: join(dir, 'provisioner.log'),
    loglevel: s.loglevel ?? 'info', // a spec's loglevel: side trials of what logging costs
    token: 's3cret',
    site: 'bench',
    choria_insecure: true,
    jwt_verify_cert: s.keys.orgPublic,
    features: { jwt: true },
  };
  const config = join(dir, 'provisioner.yaml');
  if (s.provisioner === 'upstream') {
    writeFileSync(config, stringifyYaml({ ...common, helper: PEER_HELPERS.process }));
    // --version needs an existing --choria-config (its default, checked first, usually is not)
    return {
      command: upstreamBinary(),
      args: ['run', '--config', config, '--choria-config', choria],
      versionArgs: ['run', '--choria-config', choria, '--version'],
    };
  }
  const mode = helperModeOf(s.provisioner);
  const ours = {
    ...common,
    choria_config: choria,
    // upstream keeps no history: memory here, the bucket's cost is the history/* scenarios'
    history_store: 'memory',
    helper_mode: mode,
    helper: PEER_HELPERS[s.provisioner],
    ...(mode === 'pool' && s.poolSize !== undefined ? { helper_pool_size: s.poolSize } : {}),
    ...(mode === 'pool' && s.poolDepth !== undefined ? { helper_pool_depth: s.poolDepth } : {}),
    ...(mode === 'process' && s.spawner !== undefined ? { helper_spawner: s.spawner } : {}),
  };
  writeFileSync(config, stringifyYaml(ours));
  // s.cli: another checkout's CLI (bench/run.mjs BENCH_BASELINE)
  const cli = s.cli ?? CLI;
  return {
    command: process.execPath,
    args: [...nodeArgs, cli, 'run', '--config', config],
    versionArgs: [cli, '--version'],
  };
}

/** `--version` of the provisioner (the Go binary prints it on stderr) */
function versionOf(command, args) {
  try {
    const out = spawnSync(command, args, { encoding: 'utf8', timeout: 10_000 });
    return `${out.stdout ?? ''}${out.stderr ?? ''}`.trim().split('\n')[0] || 'unknown';
  } catch {
    return 'unknown';
  }
}

export async function peerScenario(s) {
  const sim = await startSimulator({
    url: s.url,
    count: s.count,
    flow: 'jwt',
    keys: s.keys,
    nodesPerConnection: s.nodesPerConnection,
    timeScale: s.timeScale,
  });
  const dir = mkdtempSync(join(tmpdir(), 'cpts-bench-peer-'));
  let child;
  try {
    const { command, args, versionArgs, version } = writeConfigs(dir, s);
    let stderr = '';
    const simCpu0 = cpuSecondsOf(sim.pid);
    const natsCpu0 = cpuSecondsOf(s.natsPid);
    const busy0 = machineBusySeconds();
    const t0 = performance.now();
    child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr.on('data', (d) => {
      if (stderr.length < 10_000) stderr += d;
    });
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const timeline = [[0, 0]];
    const requestsOf = (t) =>
      Object.entries(t.rpcCounts ?? {}).reduce((n, [k, c]) => (k === 'discovery' ? n : n + c), 0);
    const restartsOf = (t) => t.rpcCounts?.['choria_provision#restart'] ?? 0;
    let first; // [ms, cpu] at the first poll that saw a request (discovery excluded)
    let last; // ms at the first poll that saw every node's restart
    let summary;
    let gone;
    exited.then((x) => (gone = x));
    const deadline = t0 + (s.timeoutMs ?? 300_000);
    for (;;) {
      summary = await sim.summary();
      const at = performance.now() - t0;
      const restarts = restartsOf(summary.totals);
      if (restarts !== timeline[timeline.length - 1][1]) timeline.push([Math.round(at), restarts]);
      if (first === undefined && requestsOf(summary.totals) > 0) first = { ms: at, cpu: treeCpu(child.pid) };
      if (last === undefined && restarts >= s.count) last = at;
      // the restart's splay over, every node is back as provisioned: the correctness check below
      if ((summary.totals.byState.provisioned ?? 0) >= s.count || gone !== undefined || performance.now() > deadline) {
        last ??= at;
        break;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    if (gone !== undefined)
      throw new Error(`the provisioner exited early (${gone.code ?? gone.signal}): ${stderr.trim().slice(0, 1000)}`);
    const cpu = treeCpu(child.pid);
    const simCpuS = cpuSecondsOf(sim.pid) - simCpu0;
    const natsCpuS = cpuSecondsOf(s.natsPid) - natsCpu0;
    const busy = machineBusySeconds() - busy0;
    const peakRssMb = memoryFromProc(child.pid).peakRssMb;
    const helpersPeakRssMb = descendantsPeakRssMb(child.pid);
    const provisioned = summary.totals.byState.provisioned ?? 0;
    const phaseMs = last - (first?.ms ?? last);
    const logLines = existsSync(join(dir, 'provisioner.log'))
      ? readFileSync(join(dir, 'provisioner.log'), 'utf8').split('\n').length - 1
      : 0;
    return {
      kind: 'peer',
      provisioner: s.provisioner,
      spawner: s.spawner,
      version: version ?? versionOf(command, versionArgs),
      command: [command, ...args].join(' '),
      count: s.count,
      workers: s.workers,
      provisioned,
      failed: s.count - provisioned,
      restarts: restartsOf(summary.totals),
      // from the first request the fleet received to the last node's restart received
      phaseMs,
      nodesPerMin: (s.count / phaseMs) * 60_000,
      // from spawning the process to the poll that saw the last restart
      spawnToLastMs: last,
      firstRequestMs: first?.ms,
      cpuS: cpu.own,
      helperCpuS: cpu.below,
      phaseCpuS: first === undefined ? NaN : cpu.own - first.cpu.own,
      phaseHelperCpuS: first === undefined ? NaN : cpu.below - first.cpu.below,
      // the fleet and the broker answering this provisioner, from spawn to the last node
      simCpuS,
      natsCpuS,
      // everything else the machine did meanwhile (other users of the cores, this bench driver), in cores
      backgroundCores: (busy - cpu.own - cpu.below - simCpuS - natsCpuS) / (last / 1000),
      peakRssMb,
      helpersPeakRssMb,
      logLines,
      timeline,
      sim: {
        provisioned: summary.totals.byState.provisioned ?? 0,
        violations: summary.totals.violations,
        violationsByKind: summary.totals.violationsByKind,
        rpcCounts: summary.totals.rpcCounts,
        maxConfiguredPerCycle: summary.totals.maxConfiguredPerCycle,
      },
    };
  } finally {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await gone;
      clearTimeout(t);
    }
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
