// Which companion program starts a runner's helper processes (spawner.ts has why there is one):
// the Python one (spawner-child.py, posix_spawn) or the Node one (spawner-child.ts), where their
// files are, how each is started, and the decision between them (SpawnerChoice).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The companion programs, and 'none': the helpers are started by the provisioner's own process. */
export type SpawnerKind = 'python3' | 'node' | 'none';
/** The kinds that are a program of their own. */
export type CompanionKind = Exclude<SpawnerKind, 'none'>;
/** A kind: that one only ('node' is the default); 'auto': python3 where it works, else node. */
export type SpawnerSetting = 'auto' | SpawnerKind;
export const SPAWNER_SETTINGS: readonly SpawnerSetting[] = ['auto', 'python3', 'node', 'none'];

/**
 * A companion program's file: beside this module (the build, the CLI bundle), or, for the Node
 * one when this module is loaded from the TypeScript sources as the test runner does, the build's
 * copy of it.
 */
function companionFile(kind: CompanionKind): string {
  const here =
    kind === 'python3' ? ['./spawner-child.py'] : ['./spawner-child.js', '../../../dist/host/helper/spawner-child.js'];
  const candidates = here.map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  const found = candidates.find((f) => existsSync(f));
  if (found === undefined)
    throw new Error(
      `the ${kind} helper spawner program is missing (looked for ${candidates.join(', ')}; run npm run build)`,
    );
  return found;
}

export function startCompanion(kind: CompanionKind): ChildProcess {
  const [command, args] =
    kind === 'python3' ? ['python3', ['-I', '-S', companionFile(kind)]] : [process.execPath, [companionFile(kind)]];
  return spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'], windowsHide: true });
}

/** How the spawner choice turned out. */
export interface SpawnerOutcome {
  readonly kind: SpawnerKind;
  /** under 'auto': why python3 is not used */
  readonly fallbackReason?: string;
  /** the kind set in the configuration could not come up: every helper run fails, with this reason */
  readonly unavailable?: string;
}

/**
 * Which companion starts a runner's helpers: the one owner of that decision. By default node, the
 * same on every host; python3 only when the configuration asks for it. Under 'auto' it is python3 until a python3
 * companion fails to come up (no python3 on PATH, one older than 3.9, a kernel without pidfd_open), then node for good.
 */
export class SpawnerChoice {
  #kind: SpawnerKind;
  readonly #fixed: boolean;
  #fallbackReason: string | undefined;
  /** how the choice turned out, once a companion came up or the chosen one could not */
  #outcome: SpawnerOutcome | undefined;
  readonly #waiting: ((o: SpawnerOutcome) => void)[] = [];

  constructor(setting: SpawnerSetting = 'node') {
    if (!SPAWNER_SETTINGS.includes(setting))
      throw new RangeError(`the helper spawner must be one of ${SPAWNER_SETTINGS.join(', ')}, got ${String(setting)}`);
    this.#kind = setting === 'auto' ? 'python3' : setting;
    this.#fixed = setting !== 'auto';
  }

  /** The companion to start next. */
  get kind(): SpawnerKind {
    return this.#kind;
  }

  /** Why python3 is not used, once it was tried and failed under 'auto'. */
  get fallbackReason(): string | undefined {
    return this.#fallbackReason;
  }

  /** Calls `listener` once with how the choice turned out (at once if it has). */
  onOutcome(listener: (o: SpawnerOutcome) => void): void {
    if (this.#outcome !== undefined) listener(this.#outcome);
    else this.#waiting.push(listener);
  }

  /** A companion of `kind` said it is ready. */
  cameUp(kind: SpawnerKind): void {
    this.#settle({ kind, ...(this.#fallbackReason === undefined ? {} : { fallbackReason: this.#fallbackReason }) });
  }

  #settle(o: SpawnerOutcome): void {
    if (this.#outcome !== undefined) return;
    this.#outcome = o;
    for (const l of this.#waiting.splice(0)) l(o);
  }

  /** A companion of `kind` could not come up; true when another kind should be tried instead. */
  couldNotStart(kind: SpawnerKind, why: string): boolean {
    if (this.#fixed) {
      this.#settle({ kind, unavailable: why });
      return false;
    }
    if (kind === 'python3' && this.#kind === 'python3') {
      this.#kind = 'node';
      this.#fallbackReason = why;
    }
    return kind !== this.#kind;
  }
}
