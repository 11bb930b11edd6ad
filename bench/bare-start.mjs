// The helper's bare start rate: N runs of the trivial helper with no provisioner in the process,
// one at a time and K at a time, spawned the way the provisioner spawns it (own process group,
// three pipes, the request on stdin). Deliberately imports nothing else: process creation costs
// more the more memory the parent has mapped, so this is the rate of a minimal parent.
// usage: node bench/bare-start.mjs '{"count":1000,"concurrency":[1,4]}'  -> BENCH-RESULT <json>
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { URL, fileURLToPath } from 'node:url';

const HELPER = fileURLToPath(new URL('./helpers/trivial-helper.sh', import.meta.url));
const spec = JSON.parse(process.argv[2] ?? '{}');
const count = spec.count ?? 1000;
const input = JSON.stringify({ identity: 'node-1.example.net', csr: null, ed25519_pubkey: null, inventory: '{"agents":["rpcutil"],"facts":{}}', jwt: null });

function runOnce() {
  return new Promise((resolve, reject) => {
    const child = spawn(HELPER, [], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', () => undefined);
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 && out.includes('configuration') ? resolve() : reject(new Error(`helper exited ${code}: ${out}`))));
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
for (const concurrency of spec.concurrency ?? [1]) {
  let started = 0;
  const cpu0 = process.cpuUsage();
  const reaped0 = reapedCpuSeconds();
  const busy0 = machineBusySeconds();
  const t = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < count) {
        started++;
        await runOnce();
      }
    }),
  );
  const ms = performance.now() - t;
  const cpu = process.cpuUsage(cpu0);
  const helperCpuS = reapedCpuSeconds() - reaped0;
  const busy = machineBusySeconds() - busy0;
  results.push({
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
process.stdout.write(`BENCH-RESULT ${JSON.stringify({ kind: 'bare-start', helper: HELPER, parentRssMb: process.memoryUsage.rss() / 1048576, results })}\n`);
