// Runs helper processes and reports on them in the spawner protocol's messages
// (spawner-protocol.ts): each helper in its own process group with three pipes and bounded output,
// its time limit counted from its own spawn. Used by the Node companion process
// (spawner-child.ts, which reads the run and kill messages from its stdin and writes the reports
// to its stdout) and, with `helper_spawner: none`, in the provisioner's own process (spawner.ts).
// Imports nothing of the library: the companion must start fast and stay small.
import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setImmediate, setTimeout } from 'node:timers';
import type { DoneMessage, FromSpawner, RunMessage } from './spawner-protocol.js';

interface Captured {
  readonly kept: Buffer[];
  keptBytes: number;
  seen: number;
}

function keep(b: Captured, chunk: Buffer, limit: number): void {
  b.seen += chunk.length;
  const room = limit - b.keptBytes;
  if (room <= 0) return;
  const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
  b.kept.push(part);
  b.keptBytes += part.length;
}

/** What starts helper processes for a spawner: run and kill messages in, reports out through `send`. */
export interface ProcessLauncher {
  run(m: RunMessage): void;
  /** Kills a run's process group (a run not started yet never starts). */
  kill(id: number): void;
  /** SIGKILL to every run's process group, and nothing else: the channel is gone. */
  killAll(): void;
}

/**
 * One helper run from its spawn to its one 'done' report: its process (the leader of a process group of
 * its own), its pipes and the output kept of them, its time limit and pipe-grace timers, and its kill.
 */
class HelperRun {
  readonly #m: RunMessage;
  readonly #send: (m: FromSpawner) => void;
  /** the launcher's runs that can be killed: this one is in it from its spawn until its report */
  readonly #runs: Map<number, HelperRun>;
  readonly #out: Captured = { kept: [], keptBytes: 0, seen: 0 };
  readonly #err: Captured = { kept: [], keptBytes: 0, seen: 0 };
  #child: ChildProcess | undefined;
  /** when the helper came to exist: its time limit and exitAfterMs count from here */
  #started = 0;
  #killed = false;
  #done = false;
  #tooLarge = false;
  #timedOut = false;
  #exitCode: number | null = null;
  #exitAfterMs: number | null = null;
  #outEnded = false;
  #errEnded = false;
  #grace: NodeJS.Timeout | undefined;
  #limit: NodeJS.Timeout | undefined;

  constructor(m: RunMessage, send: (m: FromSpawner) => void, runs: Map<number, HelperRun>) {
    this.#m = m;
    this.#send = send;
    this.#runs = runs;
  }

  /** Spawns the helper (in `env` unless the run message carries one) and watches it until its report. */
  start(env: NodeJS.ProcessEnv): void {
    const child = this.#spawn(env);
    if (child === undefined) return;
    // the limit counts from the moment the helper exists, not from the blocking spawn() call
    this.#started = performance.now();
    this.#child = child;
    this.#runs.set(this.#m.id, this);

    child.on('error', (e) => {
      if (child.pid === undefined) this.#finish({ spawnError: e.message });
    });
    if (child.pid !== undefined) {
      this.#send({ t: 'started', id: this.#m.id, pid: child.pid });
      this.#armLimit();
    }
    this.#capture(child);
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(this.#m.input);
    this.#watchExit(child);
  }

  /** Kills the process group; the report follows once the pipes close, or without them after the grace. */
  kill(): void {
    if (this.#killed || this.#done) return;
    this.#killed = true;
    clearTimeout(this.#limit);
    this.killGroup();
    this.#grace = setTimeout(() => {
      this.#child?.stdout?.destroy();
      this.#child?.stderr?.destroy();
      this.#finish({ forced: true });
    }, this.#m.pipeGraceMs);
  }

  /** SIGKILL to the process group and nothing else (the channel is gone). */
  killGroup(): void {
    const pid = this.#child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }

  /** The helper's process, or undefined when spawn() threw (the run is reported over then). */
  #spawn(env: NodeJS.ProcessEnv): ChildProcess | undefined {
    const m = this.#m;
    try {
      return spawn(m.file, [...m.args], {
        cwd: m.cwd,
        env: m.env ?? env,
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (e) {
      this.#finish({ spawnError: e instanceof Error ? e.message : String(e) });
      return undefined;
    }
  }

  #armLimit(): void {
    // The timer only says "look now". The look waits for the next poll phase (setImmediate), where
    // an exit and pipe ends that happened while this loop was busy are read first: a helper that
    // finished in time but was noticed late is not killed and reported as timed out. (One that
    // ended during such a stall just after its limit passes too: the lenient side.) Exited with
    // both pipes at their end means over: 'close' follows once the pipe handles are closed, in a
    // later phase of the loop. (The library's afterPendingIo in util/io-timer.ts is the same
    // rule; this module imports nothing of the library.)
    this.#limit = setTimeout(() => {
      setImmediate(() => {
        if (this.#done || this.#killed || (this.#exitAfterMs !== null && this.#outEnded && this.#errEnded)) return;
        this.#timedOut = true;
        this.kill();
      });
    }, this.#m.timeoutMs);
  }

  /** Keeps stdout and stderr up to their caps; stdout over its cap kills the group. */
  #capture(child: ChildProcess): void {
    child.stdout?.on('data', (chunk: Buffer) => {
      keep(this.#out, chunk, this.#m.maxStdout);
      if (this.#out.seen > this.#m.maxStdout && !this.#tooLarge && !this.#killed) {
        this.#tooLarge = true;
        this.kill();
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => keep(this.#err, chunk, this.#m.maxStderr));
    child.stdout?.once('end', () => (this.#outEnded = true));
    child.stderr?.once('end', () => (this.#errEnded = true));
  }

  /** The helper's exit is noted; the run is over when its pipes have closed too. */
  #watchExit(child: ChildProcess): void {
    child.on('exit', (code) => {
      this.#exitCode = code;
      // the helper's own exit; one caused by our kill says nothing about the helper's run time
      if (!this.#killed) this.#exitAfterMs = Math.round(performance.now() - this.#started);
    });
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      if (child.pid === undefined) return;
      this.#finish({ code, signal });
    });
  }

  /** Sends the run's report, once, and stops its timers. */
  #finish(fields: Partial<Pick<DoneMessage, 'spawnError' | 'code' | 'signal' | 'forced'>>): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#grace);
    clearTimeout(this.#limit);
    this.#runs.delete(this.#m.id);
    this.#send({
      t: 'done',
      id: this.#m.id,
      code: null,
      signal: null,
      forced: false,
      exitCode: this.#exitCode,
      exitAfterMs: this.#exitAfterMs,
      tooLarge: this.#tooLarge,
      timedOut: this.#timedOut,
      stdout: Buffer.concat(this.#out.kept).toString('base64'),
      stdoutBytes: this.#out.seen,
      stderr: Buffer.concat(this.#err.kept).toString('base64'),
      stderrBytes: this.#err.seen,
      ...fields,
    });
  }
}

/** The report on a run killed before it started: there is nothing to say of it. */
function neverStarted(id: number): DoneMessage {
  return {
    t: 'done',
    id,
    code: null,
    signal: null,
    exitCode: null,
    exitAfterMs: null,
    forced: false,
    tooLarge: false,
    timedOut: false,
    stdout: '',
    stdoutBytes: 0,
    stderr: '',
    stderrBytes: 0,
  };
}

/**
 * A runner whose reports go to `send`, always from a later turn of the event loop than the call
 * that caused them. `env` is the helpers' environment when a run message carries none (a plain
 * copy: spawn() walks the environment object for every child, and process.env is slow to walk).
 */
export function processLauncher(send: (m: FromSpawner) => void, env: NodeJS.ProcessEnv): ProcessLauncher {
  const runs = new Map<number, HelperRun>();

  /**
   * Runs waiting to be started, oldest first. spawn() blocks this process until the new process has
   * called exec(), which is slow on a busy machine: starting a whole burst in one go kept this loop
   * from reading exits and pipes until the last of them had started. One start per loop turn lets
   * the exits, output and reports of the others through.
   */
  const queued = new Map<number, RunMessage>();
  let draining = false;

  function startNext(): void {
    const next = queued.entries().next();
    if (!next.done) {
      const [id, m] = next.value;
      queued.delete(id);
      new HelperRun(m, send, runs).start(env);
    }
    if (queued.size > 0) setImmediate(startNext);
    else draining = false;
  }

  function enqueue(m: RunMessage): void {
    queued.set(m.id, m);
    if (draining) return;
    draining = true;
    setImmediate(startNext);
  }

  /** A kill for a run not started yet: it never starts; the report has nothing to say. */
  function dropQueued(id: number): boolean {
    if (!queued.delete(id)) return false;
    setImmediate(() => send(neverStarted(id)));
    return true;
  }

  return {
    run: enqueue,
    kill: (id) => {
      if (!dropQueued(id)) runs.get(id)?.kill();
    },
    killAll: () => {
      queued.clear();
      for (const r of runs.values()) r.killGroup();
    },
  };
}
