// Process trees from Linux /proc: what a command started, and whether it is gone.
import { readFileSync, readdirSync } from 'node:fs';

interface ProcInfo {
  pid: number;
  ppid: number;
  state: string;
}

function readProc(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after "(comm)": state, ppid, ...
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(rest[1]), state: rest[0] ?? '?' };
  } catch {
    return undefined;
  }
}

function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return undefined;
  }
}

/** Every live descendant of `root`, with its command line. */
export function descendants(root: number): { pid: number; cmdline: string }[] {
  const all = readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map((e) => readProc(Number(e)))
    .filter((p): p is ProcInfo => p !== undefined);
  const found: { pid: number; cmdline: string }[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const p of all) {
      if (p.ppid !== parent || p.state === 'Z') continue;
      const cmdline = commandLine(p.pid);
      if (cmdline === undefined) continue; // it ended while we looked
      found.push({ pid: p.pid, cmdline });
      queue.push(p.pid);
    }
  }
  return found;
}

/** True while `pid` exists and is not a zombie (a zombie has exited; only its entry is left). */
export function isAlive(pid: number): boolean {
  const p = readProc(pid);
  return p !== undefined && p.state !== 'Z';
}
