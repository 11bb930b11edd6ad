// The messages between the provisioner (spawner.ts) and its helper-spawning companion process
// (spawner-child.ts, or spawner-child.py). One JSON object per line on the companion's stdin and
// stdout, so that a companion in any language can speak it; the helper's output crosses as base64.
// End of the companion's stdin means the provisioner is gone.

/** provisioner -> companion: start a helper */
export interface RunMessage {
  readonly t: 'run';
  readonly id: number;
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** the helper's environment; absent: the companion's own (the provisioner's when it started it) */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** the helper's stdin */
  readonly input: string;
  /** stdout above this many bytes kills the process group (`tooLarge`) */
  readonly maxStdout: number;
  /** stderr kept; the rest is counted and dropped */
  readonly maxStderr: number;
  /** after a kill, how long to wait for the pipes to close before giving up on them */
  readonly pipeGraceMs: number;
  /**
   * The helper's time limit, counted by the companion from the spawn: the time the run waited in
   * the companion's queue or its report waits in the provisioner's is not the helper's.
   */
  readonly timeoutMs: number;
}

/** provisioner -> companion: kill a helper's process group */
export interface KillMessage {
  readonly t: 'kill';
  readonly id: number;
}

export type ToSpawner = RunMessage | KillMessage;

/** companion -> provisioner, its first line: it reads run messages from now on */
export interface ReadyMessage {
  readonly t: 'ready';
  readonly companion: string;
  readonly protocol: 1;
}

/** companion -> provisioner, its only line: it cannot work here (too old an interpreter or kernel) */
export interface UnsupportedMessage {
  readonly t: 'unsupported';
  readonly why: string;
}

/** companion -> provisioner: the helper process was started (its time limit runs from here) */
export interface StartedMessage {
  readonly t: 'started';
  readonly id: number;
  /**
   * the helper's pid, which is also its process group's id: the
   * provisioner kills the group itself if the companion dies
   */
  readonly pid: number;
}

/** companion -> provisioner: the run is over */
export interface DoneMessage {
  readonly t: 'done';
  readonly id: number;
  readonly spawnError?: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly exitCode: number | null;
  /** ms from the spawn to the helper's exit as the companion saw it; null if it did not exit before a kill */
  readonly exitAfterMs: number | null;
  readonly forced: boolean;
  readonly tooLarge: boolean;
  /** the companion killed the group because the run was still going at its time limit */
  readonly timedOut: boolean;
  /** base64 of the stdout kept (at most maxStdout bytes) */
  readonly stdout: string;
  readonly stdoutBytes: number;
  /** base64 of the stderr kept (at most maxStderr bytes) */
  readonly stderr: string;
  readonly stderrBytes: number;
}

export type FromSpawner = ReadyMessage | UnsupportedMessage | StartedMessage | DoneMessage;
