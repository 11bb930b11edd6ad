// Small statistics and formatting helpers.
import { readdirSync, readFileSync } from 'node:fs';

/** Nearest-rank percentile of a sorted array (p in 0..100). */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** Peak and current resident set size of this process in MB (Linux /proc). */
export function memoryFromProc(pid = 'self') {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { peakRssMb: kb('VmHWM') / 1024, rssMb: kb('VmRSS') / 1024 };
}

/**
 * User + system CPU seconds of a process from /proc/<pid>/stat (clock ticks of 100 Hz); with
 * `reaped`, also those of its children it has waited for (cutime + cstime).
 */
export function cpuSecondsOf(pid, reaped = false) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    return (reaped ? own + Number(fields[13]) + Number(fields[14]) : own) / 100;
  } catch {
    return NaN;
  }
}

export const fmt = {
  int: (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-'),
  ms: (n) => (Number.isFinite(n) ? (n >= 100 ? `${Math.round(n)} ms` : `${n.toFixed(1)} ms`) : '-'),
  mb: (n) => (Number.isFinite(n) ? `${Math.round(n)} MB` : '-'),
  pct: (n) => (Number.isFinite(n) ? `${Math.round(n * 100)}%` : '-'),
  s: (n) => (Number.isFinite(n) ? `${(n / 1000).toFixed(2)} s` : '-'),
};

/** CPU seconds of reaped children (cutime + cstime) of this process. */
export function reapedChildrenCpuSeconds() {
  try {
    const text = readFileSync('/proc/self/stat', 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return NaN;
  }
}

/** Pids of the live children of `pid` (Linux /proc/<pid>/task/<tid>/children). */
export function childPids(pid = process.pid) {
  const out = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text !== '') out.push(...text.split(' ').map(Number));
    }
  } catch {
    // the process is gone
  }
  return out;
}

/**
 * CPU seconds of live children of this process and their descendants (with what they reaped: the
 * helper spawner's helpers), except `excluded` pids.
 */
export function liveChildrenCpuSeconds(excluded = []) {
  let sum = 0;
  const walk = (pid) => {
    for (const c of childPids(pid)) {
      if (excluded.includes(c)) continue;
      sum += cpuSecondsOf(c, true) || 0;
      walk(c);
    }
  };
  walk(process.pid);
  return sum;
}

/** CPU seconds of `pid` and, separately, of every process under it (reaped and live). */
export function treeCpu(pid) {
  const own = cpuSecondsOf(pid);
  let below = cpuSecondsOf(pid, true) - own;
  const walk = (p) => {
    for (const c of childPids(p)) {
      below += cpuSecondsOf(c, true) || 0;
      walk(c);
    }
  };
  walk(pid);
  return { own, below };
}

/** Busy CPU seconds of the whole machine so far (all cores), from /proc/stat. */
export function machineBusySeconds() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = line;
  return (user + nice + system + irq + softirq + steal) / 100;
}
