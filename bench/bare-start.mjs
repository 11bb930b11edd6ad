// The helper's bare start rate: N runs of the trivial helper with no provisioner in the process,
// K at a time, the request on stdin, the reply read from stdout. Three methods:
//   product  spawned from Node the way the product's default (Node) helper spawner does it (own
//            process group, three pipes)
//   python3  through the product's opt-in helper spawner, spawner-child.py (posix_spawn), alone
//   simple   the way anyone would measure it: a plain Node parent, default spawn options
// Deliberately imports nothing else: process creation costs more the more memory the parent has
// mapped, so this is the rate of a minimal parent.
// usage: node bench/bare-start.mjs '{"runs":[{"method":"simple","concurrency":16,"count":2000}]}'  -> BENCH-RESULT <json>
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { URL, fileURLToPath } from 'node:url';

const HELPER = fileURLToPath(new URL('./helpers/trivial-helper.sh', import.meta.url));
const spec = JSON.parse(process.argv[2] ?? '{}');
const runs = spec.runs ?? [{ method: 'simple', concurrency: 16, count: 1000 }];
const input = JSON.stringify({
  identity: 'node-1.example.net',
  csr: null,
  ed25519_pubkey: null,
  inventory: '{"agents":["rpcutil"],"facts":{}}',
  jwt: null,
});

const SPAWN_OPTIONS = {
  product: { detached: true, stdio: ['pipe', 'pipe', 'pipe'] },
  simple: undefined,
  python3: undefined,
};
const PYTHON_SPAWNER = fileURLToPath(new URL('../packages/core/dist/host/helper/spawner-child.py', import.meta.url));

/** The product's Python spawner, driven over its JSON-lines protocol; close() waits for its exit (so its children's CPU is reaped into ours). */
function pythonSpawner() {
  const child = spawn('python3', ['-I', '-S', PYTHON_SPAWNER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map();
  let nextId = 1;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const m = JSON.parse(line);
    if (m.t !== 'done') return;
    const settle = waiting.get(m.id);
    waiting.delete(m.id);
    const out = Buffer.from(m.stdout, 'base64').toString();
    if (m.code === 0 && out.includes('configuration')) settle.resolve();
    else settle.reject(new Error(`helper exited ${m.code} ${m.spawnError ?? ''}: ${out}`));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    run: () =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        waiting.set(id, { resolve, reject });
        child.stdin.write(
          `${JSON.stringify({ t: 'run', id, file: HELPER, args: [], cwd: process.cwd(), input, maxStdout: 1 << 20, maxStderr: 65536, pipeGraceMs: 1000, timeoutMs: 10000 })}\n`,
        );
      }),
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

function runOnce(method) {
  return new Promise((resolve, reject) => {
    const child = spawn(HELPER, [], SPAWN_OPTIONS[method]);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', () => undefined);
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 && out.includes('configuration') ? resolve() : reject(new Error(`helper exited ${code}: ${out}`)),
    );
  });
}

/** CPU seconds of the children this process has reaped (cutime + cstime). */
function reapedCpuSeconds() {
  const text = readFileSync('/proc/self/stat', 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/** Busy CPU seconds of the whole machine (all cores), from /proc/stat. */
function machineBusySeconds() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / 100;
}

const results = [];
for (const { method, concurrency, count } of runs) {
  if (!(method in SPAWN_OPTIONS)) throw new Error(`unknown method ${method}`);
  let started = 0;
  const companion = method === 'python3' ? pythonSpawner() : undefined;
  const cpu0 = process.cpuUsage();
  const reaped0 = reapedCpuSeconds();
  const busy0 = machineBusySeconds();
  const t = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < count) {
        started++;
        await (companion === undefined ? runOnce(method) : companion.run());
      }
    }),
  );
  const ms = performance.now() - t;
  await companion?.close();
  const cpu = process.cpuUsage(cpu0);
  const helperCpuS = reapedCpuSeconds() - reaped0;
  const busy = machineBusySeconds() - busy0;
  results.push({
    method,
    concurrency,
    count,
    ms,
    startsPerMin: (count / ms) * 60_000,
    parentCpuMsPerStart: (cpu.user + cpu.system) / 1000 / count,
    helperCpuMsPerStart: (helperCpuS * 1000) / count,
    // everything else the machine did meanwhile, in cores
    backgroundCores: (busy - (cpu.user + cpu.system) / 1e6 - helperCpuS) / (ms / 1000),
  });
}
process.stdout.write(
  `BENCH-RESULT ${JSON.stringify({ kind: 'bare-start', helper: HELPER, parentRssMb: process.memoryUsage.rss() / 1048576, results })}\n`,
);
