// Starting a helper program and killing it together with everything it started.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { HelperCommandError } from './errors.js';
import { ShellSplitError, splitCommand } from '../../util/shellquote.js';

/** Splits the `helper` setting like the Go provisioner; throws HelperCommandError with its texts. */
export function parseHelperCommand(command: string): [string, ...string[]] {
  let words: string[];
  try {
    words = splitCommand(command);
  } catch (err) {
    if (err instanceof ShellSplitError)
      throw new HelperCommandError(`cannot parse helper command: ${err.message}`, { cause: err });
    throw err;
  }
  const [program, ...args] = words;
  if (program === undefined) throw new HelperCommandError('cannot parse helper command: empty');
  return [program, ...args];
}

export interface SpawnSettings {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Starts the program directly (no shell) as the leader of a new process group, so that
 * killProcessGroup also reaches the processes it started (a `sleep`, a CA client, …).
 * A missing or non-executable program is reported through the child's 'error' event.
 */
export function spawnHelper(
  argv: readonly [string, ...string[]],
  settings: SpawnSettings,
): ChildProcessWithoutNullStreams {
  const [program, ...args] = argv;
  return spawn(program, args, {
    cwd: settings.cwd,
    env: settings.env ?? process.env,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    windowsHide: true,
  });
}

/** SIGKILLs the child's whole process group; a group that is already gone is fine. */
export function killProcessGroup(child: { readonly pid?: number | undefined }): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // ESRCH: everything in the group has exited already.
  }
}
