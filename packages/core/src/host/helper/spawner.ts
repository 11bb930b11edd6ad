// Starts one-shot helper processes from a small companion process instead of the provisioner.
//
// Why: Node starts a child with fork() + exec(), and fork() copies the page tables of the whole
// parent. A provisioner with 150 MB of heap forks much more slowly than a bare Node process (on the
// 2-core benchmark VM ~9 ms instead of ~6 ms per helper), and the fork runs on the provisioner's
// event-loop thread, stalling every RPC meanwhile. The companion ("spawner") is a bare Node process
// that does only this: the provisioner sends it the program, arguments and stdin text, it runs the
// helper exactly as ProcessHelper did (own process group, three pipes, bounded output, the kill
// grace period) and sends back the exit status and the output. Three IPC messages per helper run
// (run, started, done).
//
// The companion also keeps the helper's time limit, from its own spawn of the helper: this
// process may read a report late (its event loop busy with two sites' start-up), and a run that
// ended within its limit must not be called timed out for that.
//
// The helper's environment is the provisioner's as it was when the spawner started (the first
// helper run), unless ProcessHelper was given one; its working directory is the provisioner's at
// the time of each run.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { RunMessage } from './spawner-protocol.js';
import { errorText, isPlainObject as isRecord } from '../../util/values.js';
import { settledWithin } from '../../util/deadline.js';

/** The most spawner processes a ProcessHelper starts, whatever the core count (each is a Node process of ~45 MB). */
export const MAX_SPAWNERS = 4;

/** How long close() waits for the spawner to exit, after closing its channel and again after SIGKILL. */
const SPAWNER_EXIT_MS = 2000;

/** What the provisioner asks for: the run message, with the program and its arguments as one argv. */
export interface SpawnRequest extends Omit<RunMessage, 't' | 'id' | 'file' | 'args'> {
  readonly argv: readonly [string, ...string[]];
}

/** How a run ended. */
export interface SpawnOutcome {
  /** the program could not be started (spawn's own message, e.g. `spawn /x ENOENT`) */
  readonly spawnError?: string;
  /** the spawner itself went away; nothing is known about the helper */
  readonly lost?: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** status from the 'exit' event (before the pipes closed), null if it never came */
  readonly exitCode: number | null;
  /** ms from the spawn to that exit, measured by the spawner; null if the helper did not exit before a kill */
  readonly exitAfterMs: number | null;
  /** the spawner killed the group: the run was still going (or its pipes open) at the time limit */
  readonly timedOut: boolean;
  /** the pipes were given up on after a kill (a process outside the group kept them open) */
  readonly forced: boolean;
  /** stdout went over maxStdout: the spawner killed the group */
  readonly tooLarge: boolean;
  readonly stdout: Buffer;
  readonly stdoutBytes: number;
  readonly stderr: Buffer;
  readonly stderrBytes: number;
}

export interface SpawnEvents {
  /** the spawner started the helper process (its time limit runs from here) */
  onStarted(): void;
  onDone(outcome: SpawnOutcome): void;
}

export interface SpawnedRun {
  /** Kills the helper's process group; onDone follows once the pipes closed or the grace ran out. */
  kill(): void;
}

/**
 * The companion program: the compiled spawner-child.js beside this module, or (when this module is
 * loaded from the TypeScript sources, as the test runner does) the build's copy of it.
 */
function spawnerProgram(): string {
  const candidates = [new URL('./spawner-child.js', import.meta.url), new URL('../../../dist/host/helper/spawner-child.js', import.meta.url)].map((u) =>
    fileURLToPath(u),
  );
  const found = candidates.find((f) => existsSync(f));
  if (found === undefined) throw new Error(`the helper spawner program is missing (looked for ${candidates.join(', ')}; run npm run build)`);
  return found;
}

function bytes(v: unknown): Buffer {
  return v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : Buffer.alloc(0);
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

function numOrNull(v: unknown): number | null {
  return typeof v === 'number' ? v : null;
}

/** The provisioner's side: starts the spawner on first use and routes its messages to the runs. */
export class HelperSpawner {
  #child: ChildProcess | undefined;
  readonly #runs = new Map<number, SpawnEvents>();
  #nextId = 1;
  #closed = false;

  /** Runs handed to this spawner and not reported done yet. */
  get inFlight(): number {
    return this.#runs.size;
  }

  run(req: SpawnRequest, events: SpawnEvents): SpawnedRun {
    const id = this.#nextId++;
    const child = this.#closed ? undefined : this.#ensure();
    const [file, ...args] = req.argv;
    this.#runs.set(id, events);
    this.#updateRef();
    try {
      if (child === undefined) throw new Error('the helper spawner is closed');
      const run: RunMessage = {
        t: 'run',
        id,
        file,
        args,
        cwd: req.cwd,
        env: req.env,
        input: req.input,
        maxStdout: req.maxStdout,
        maxStderr: req.maxStderr,
        pipeGraceMs: req.pipeGraceMs,
        timeoutMs: req.timeoutMs,
      };
      child.send(run);
    } catch (err) {
      // settle on a later tick, like any other outcome
      queueMicrotask(() => this.#lose(id, `could not hand the helper to the spawner process: ${errorText(err)}`));
    }
    return {
      kill: () => {
        if (!this.#runs.has(id) || child === undefined || !child.connected) return;
        try {
          child.send({ t: 'kill', id });
        } catch {
          // the spawner is gone; its exit settles the run
        }
      },
    };
  }

  /** Stops the spawner; helpers still running are killed with it. */
  async close(): Promise<void> {
    this.#closed = true;
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // an idle spawner is unref'd; waiting for its exit must keep the process alive, or a caller
    // awaiting close() with nothing else pending sees its process end mid-await (exit code 0)
    child.ref();
    if (child.connected) child.disconnect();
    else child.kill('SIGKILL');
    if (await settledWithin(exited, SPAWNER_EXIT_MS)) return;
    // It exits as soon as its channel closes (killing the helpers it runs): one that has not is
    // stuck, and close() must end all the same.
    child.kill('SIGKILL');
    await settledWithin(exited, SPAWNER_EXIT_MS);
  }

  #ensure(): ChildProcess {
    if (this.#child !== undefined && this.#child.connected) return this.#child;
    const child = spawn(process.execPath, [spawnerProgram()], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'advanced',
      windowsHide: true,
    });
    this.#child = child;
    child.on('message', (m: unknown) => this.#onMessage(m));
    child.on('error', () => undefined); // reported through 'exit' / 'disconnect'
    child.once('disconnect', () => {
      if (this.#child === child) this.#child = undefined;
      for (const id of [...this.#runs.keys()]) this.#lose(id, 'the helper spawner process exited');
    });
    return child;
  }

  #lose(id: number, why: string): void {
    const events = this.#runs.get(id);
    if (events === undefined) return;
    this.#runs.delete(id);
    this.#updateRef();
    const none = Buffer.alloc(0);
    events.onDone({ lost: why, code: null, signal: null, exitCode: null, exitAfterMs: null, timedOut: false, forced: false, tooLarge: false, stdout: none, stdoutBytes: 0, stderr: none, stderrBytes: 0 });
  }

  #onMessage(m: unknown): void {
    if (!isRecord(m) || typeof m['id'] !== 'number') return;
    const events = this.#runs.get(m['id']);
    if (events === undefined) return;
    if (m['t'] === 'started') {
      events.onStarted();
      return;
    }
    if (m['t'] !== 'done') return;
    this.#runs.delete(m['id']);
    this.#updateRef();
    const spawnError = m['spawnError'];
    const signal = m['signal'];
    events.onDone({
      ...(typeof spawnError === 'string' ? { spawnError } : {}),
      code: numOrNull(m['code']),
      signal: typeof signal === 'string' ? (signal as NodeJS.Signals) : null,
      exitCode: numOrNull(m['exitCode']),
      exitAfterMs: numOrNull(m['exitAfterMs']),
      timedOut: m['timedOut'] === true,
      forced: m['forced'] === true,
      tooLarge: m['tooLarge'] === true,
      stdout: bytes(m['stdout']),
      stdoutBytes: num(m['stdoutBytes']),
      stderr: bytes(m['stderr']),
      stderrBytes: num(m['stderrBytes']),
    });
  }

  /** The idle spawner must not keep the provisioner's process alive. */
  #updateRef(): void {
    const child = this.#child;
    if (child === undefined) return;
    if (this.#runs.size > 0) {
      child.ref();
      child.channel?.ref();
    } else {
      child.unref();
      child.channel?.unref();
    }
  }
}

/**
 * Several spawners; each run goes to the one with the fewest runs in flight. Why more than one:
 * spawn() blocks a spawner until the new process has called exec() (libuv waits for that, so that
 * a kill right after the start cannot hit the forked copy of Node), and on a 2-core VM whose forks
 * are slow that wait was ~9 ms a helper: with 50 workers a single spawner spent most of its time
 * in it and the helpers' starts queued behind one another. With one spawner per core the starts
 * overlap (process mode 1.25 times the nodes/min on 2 cores, BENCHMARKS.md); more spawners than
 * cores gained nothing. A spawner starts on first use, so a site that runs one helper at a time
 * has only one.
 */
export class HelperSpawners {
  readonly #spawners: readonly HelperSpawner[];

  constructor(count = Math.min(availableParallelism(), MAX_SPAWNERS)) {
    if (!Number.isInteger(count) || count < 1) throw new RangeError(`the number of helper spawners must be a positive integer, got ${count}`);
    this.#spawners = Array.from({ length: count }, () => new HelperSpawner());
  }

  run(req: SpawnRequest, events: SpawnEvents): SpawnedRun {
    let least = this.#spawners[0] as HelperSpawner;
    for (const s of this.#spawners) if (s.inFlight < least.inFlight) least = s;
    return least.run(req, events);
  }

  /** Stops every spawner; helpers still running are killed with them. */
  async close(): Promise<void> {
    await Promise.all(this.#spawners.map((s) => s.close()));
  }
}
