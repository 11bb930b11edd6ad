// The lab's processes: each started in its own process group with its output appended to a log
// file, stopped by signalling the whole group (a server's restart loop and the server under it,
// a broker and anything it forks). Every group started is remembered, so stopAllLabProcesses()
// in afterAll (and a last-resort exit hook) never leaves one behind.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { sleep } from '../wait.js';

export interface LabProcessOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** stdout and stderr are appended here */
  readonly logFile: string;
}

export interface LabProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** true once every process of the group is gone */
  gone(): boolean;
  /** `signal` to the group, SIGKILL after `graceMs`; resolves when the group is gone */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

const live = new Set<LabProcess>();

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

export function startLabProcess(
  name: string,
  command: string,
  args: readonly string[],
  opts: LabProcessOptions,
): LabProcess {
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  closeSync(fd);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${name} (${command}): no process id`);
  // reap the leader so it does not linger as a zombie (a zombie leader keeps the group "alive")
  child.on('error', () => undefined);
  child.unref();
  const proc: LabProcess = {
    name,
    pid,
    logFile: opts.logFile,
    gone: () => !groupAlive(pid),
    async stop(signal = 'SIGTERM', graceMs = 5_000) {
      signalGroup(pid, signal);
      const deadline = Date.now() + graceMs;
      while (groupAlive(pid) && Date.now() < deadline) await sleep(50);
      if (groupAlive(pid)) {
        signalGroup(pid, 'SIGKILL');
        while (groupAlive(pid)) await sleep(20);
      }
      live.delete(proc);
    },
  };
  live.add(proc);
  return proc;
}

/** Stops every lab process group still running (SIGTERM, then SIGKILL after 3 s). */
export async function stopAllLabProcesses(): Promise<void> {
  await Promise.all([...live].map((p) => p.stop('SIGTERM', 3_000)));
}

process.once('exit', () => {
  for (const p of live) signalGroup(p.pid, 'SIGKILL');
});
