import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { errorText } from '../util/values.js';
import { ProvisionerError } from '../util/errors.js';

/** One problem found in a configuration file; `message` already starts with the file name. */
export interface ConfigProblem {
  /** the key concerned (`workers`, `features.pki`, `plugin.security.provider`), when there is one */
  readonly key?: string;
  readonly message: string;
}

/**
 * Every problem found while loading one configuration file, collected so the CLI can print them
 * all at once. `reasons` are complete messages, each starting with the file name.
 */
export class ConfigError extends ProvisionerError {
  override readonly name = 'ConfigError';
  /** base name of the file, as used at the start of every message */
  readonly file: string;
  /** the key concerned when exactly one problem with a key was found */
  readonly key?: string;
  readonly reasons: readonly string[];
  readonly problems: readonly ConfigProblem[];

  constructor(file: string, problems: readonly ConfigProblem[]) {
    super(problems.map((p) => p.message).join('\n'));
    this.file = file;
    this.problems = Object.freeze([...problems]);
    this.reasons = Object.freeze(problems.map((p) => p.message));
    const only = problems.length === 1 ? problems[0] : undefined;
    if (only?.key !== undefined) this.key = only.key;
  }
}

/** The label used at the start of messages: the base name of a path, or the label itself. */
export function sourceLabel(source: string): string {
  return basename(source) || source;
}

/** Collects problems for one file and turns them into a {@link ConfigError}. */
export class ProblemCollector {
  readonly file: string;
  readonly #found: ConfigProblem[] = [];

  constructor(source: string) {
    this.file = sourceLabel(source);
  }

  /** Adds `<file>: <text>`. */
  add(text: string, key?: string): void {
    const message = `${this.file}: ${text}`;
    this.#found.push(key === undefined ? { message } : { key, message });
  }

  has(key: string): boolean {
    return this.#found.some((p) => p.key === key);
  }

  get count(): number {
    return this.#found.length;
  }

  throwIfAny(): void {
    if (this.#found.length > 0) throw new ConfigError(this.file, this.#found);
  }
}

/** Reads a configuration file as text; a file that cannot be read is a ConfigError naming it. */
export function readConfigText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const label = sourceLabel(file);
    throw new ConfigError(label, [{ message: `${label}: cannot read ${file}: ${describeFsError(err)}` }]);
  }
}

/** Short text for a file system error, without the stack or the syscall noise. */
function describeFsError(err: unknown): string {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
  switch (code) {
    case 'ENOENT':
      return 'file not found';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory, not a file';
    default:
      return errorText(err);
  }
}
