// The active/active scenario: N `choria-provisioner run` processes of one site (coordination:
// active_active, from examples/config/provisioner-active-active.yaml) share one simulated fleet.
// Their helper is I/O bound (test/e2e/fixtures/sleepy-pool-helper.mjs waits delayMs per node, as
// a CMDB lookup would), so the fleet's wall time measures how well the instances share the work,
// not how busy the machine is. Clock: from spawning the first instance until the simulator
// reports every node provisioned.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { URL, fileURLToPath } from 'node:url';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { startSimulator } from './lib/simulator.mjs';
import { cpuSecondsOf, machineBusySeconds, treeCpu } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages', 'cli', 'dist', 'bin.js');
const HELPER = join(ROOT, 'test', 'e2e', 'fixtures', 'sleepy-pool-helper.mjs');
const EXAMPLE = join(ROOT, 'examples', 'config', 'provisioner-active-active.yaml');

function instanceConfig(dir, s, name, runs) {
  const choria = join(dir, `${name}.cfg`);
  writeFileSync(
    choria,
    `identity = ${name}.example.net\nplugin.choria.middleware_hosts = ${s.url}\nplugin.security.provider = file\n`,
  );
  const example = parseYaml(readFileSync(EXAMPLE, 'utf8'));
  delete example.broker_provisioning_password;
  delete example.monitor_port;
  const config = join(dir, `${name}.yaml`);
  writeFileSync(
    config,
    stringifyYaml({
      ...example,
      site: 'bench',
      workers: s.workers,
      token: 's3cret',
      choria_insecure: true,
      choria_config: choria,
      helper: `${process.execPath} ${HELPER} --delay-ms ${s.delayMs} --log ${runs} --instance ${name}`,
      // defaults: the pool as an operator gets it without the two keys (one process per worker,
      // one request at a time each); otherwise one process taking every worker's request at once
      ...(s.poolDefaults === true ? {} : { helper_pool_size: 1, helper_pool_depth: s.workers }),
      coordination_heartbeat: s.heartbeat,
      // what this scenario measures is the sharing; the history's cost is the history/* scenarios'
      history_store: 'memory',
      logfile: join(dir, `${name}.log`),
    }),
  );
  return config;
}

/** An instance's JSON log lines, as { message, at } with `at` in ms since the epoch ([] when it wrote none). */
function readLog(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const entry = JSON.parse(l);
      return { message: entry.message, at: Date.parse(entry.timestamp) };
    });
}

/**
 * From the first node an instance started on to the last one any finished, from the instances'
 * logs: the sharing itself, without process start-up and the first discovery.
 */
function provisioningPhaseMs(logs) {
  let first = Infinity;
  let last = -Infinity;
  for (const { message, at } of logs.flat()) {
    if (message.startsWith('Provisioning ')) first = Math.min(first, at);
    else if (message.startsWith('Provisioned ')) last = Math.max(last, at);
  }
  return last - first;
}

/**
 * Each instance's start-up, in ms from spawning the processes, from its log: its first line, the
 * membership settled ("formed with"), its first node started and finished.
 */
function startupTimeline(logs, spawnedAt) {
  return logs.map((entries) => {
    const at = (test) => {
      const e = entries.find((x) => test(x.message));
      return e === undefined ? undefined : e.at - spawnedAt;
    };
    return {
      firstLineMs: at(() => true),
      settledMs: at((m) => m.includes(' formed with ')),
      firstStartedMs: at((m) => m.startsWith('Provisioning ')),
      firstFinishedMs: at((m) => m.startsWith('Provisioned ')),
    };
  });
}

/** ms after spawning at which startUpCpu() is read: the start-up, then the first nodes */
const CPU_MARKS_MS = [1000, 2000];

/**
 * CPU ms used since `base` by the machine, the instances (CLI processes), their helpers (every
 * process under them), the simulator and nats-server: where the two cores went during start-up.
 */
function startUpCpu(children, simPid, natsPid, base) {
  const trees = children.map((c) => treeCpu(c.pid));
  const now = {
    machine: machineBusySeconds(),
    clis: trees.reduce((sum, t) => sum + (t.own || 0), 0),
    helpers: trees.reduce((sum, t) => sum + (t.below || 0), 0),
    simulator: cpuSecondsOf(simPid, true) || 0,
    nats: natsPid === undefined ? NaN : cpuSecondsOf(natsPid),
  };
  if (base === undefined) return now;
  return Object.fromEntries(Object.entries(now).map(([k, v]) => [k, Math.round((v - base[k]) * 1000)]));
}

export async function activeActiveScenario(s) {
  const sim = await startSimulator({
    url: s.url,
    count: s.count,
    flow: 'plain',
    nodesPerConnection: s.nodesPerConnection,
    timeScale: s.timeScale,
  });
  const dir = mkdtempSync(join(tmpdir(), 'cpts-bench-aa-'));
  const runs = join(dir, 'helper-runs.txt');
  const children = [];
  try {
    const configs = Array.from({ length: s.instances }, (_, i) => instanceConfig(dir, s, `prov-${i + 1}`, runs));
    const cpuBase = startUpCpu([], sim.pid, s.natsPid);
    const t0 = performance.now();
    const spawnedAt = Date.now();
    // BENCH_PROVISIONER_NODE_OPTIONS: e.g. --cpu-prof --cpu-prof-dir=DIR (bench/run.mjs --profile)
    const nodeArgs = (process.env.BENCH_PROVISIONER_NODE_OPTIONS ?? '').split(' ').filter((a) => a !== '');
    for (const config of configs)
      children.push(spawn(process.execPath, [...nodeArgs, CLI, 'run', '--config', config], { stdio: 'ignore' }));
    const cpuMarks = [];
    const cpuTimers = CPU_MARKS_MS.map((at) =>
      setTimeout(() => cpuMarks.push({ at, ...startUpCpu(children, sim.pid, s.natsPid, cpuBase) }), at),
    );
    // polled often: the poll interval adds to both the one-instance and the three-instance time
    const summary = await sim.waitFor(
      (x) => (x.totals.byState.provisioned ?? 0) >= s.count,
      s.timeoutMs ?? 300_000,
      25,
    );
    const ms = performance.now() - t0;
    for (const t of cpuTimers) clearTimeout(t);
    const logs = configs.map((c) => readLog(c.replace(/\.yaml$/, '.log')));
    const phaseMs = provisioningPhaseMs(logs);
    const startup = startupTimeline(logs, spawnedAt);
    const lines = existsSync(runs)
      ? readFileSync(runs, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
      : [];
    const perInstance = {};
    for (const l of lines) {
      const who = l.split(' ')[0];
      perInstance[who] = (perInstance[who] ?? 0) + 1;
    }
    return {
      kind: 'active-active',
      instances: s.instances,
      poolDefaults: s.poolDefaults === true,
      count: s.count,
      workers: s.workers,
      delayMs: s.delayMs,
      provisioned: summary.totals.byState.provisioned ?? 0,
      ms,
      phaseMs,
      phaseNodesPerMin: ((summary.totals.byState.provisioned ?? 0) / phaseMs) * 60_000,
      nodesPerMin: ((summary.totals.byState.provisioned ?? 0) / ms) * 60_000,
      helperRunsPerNode: lines.length / s.count,
      helperRunsPerInstance: perInstance,
      maxConfiguredPerCycle: summary.totals.maxConfiguredPerCycle,
      lockRefusals: summary.totals.violationsByKind?.['lock-held'] ?? 0,
      startup,
      startUpCpu: cpuMarks,
    };
  } finally {
    const exited = children.map((c) =>
      c.exitCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', r)),
    );
    for (const c of children) c.kill('SIGTERM');
    await Promise.race([Promise.all(exited), new Promise((r) => setTimeout(r, 15_000))]);
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
