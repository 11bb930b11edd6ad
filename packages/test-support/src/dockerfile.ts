// Reads a Dockerfile the way the tests need it: instructions with continuation lines joined and
// comments dropped, by operation, with exec-form (JSON list) arguments parsed.
export interface Dockerfile {
  /** every instruction, e.g. `FROM node:20-slim AS install` */
  readonly instructions: readonly string[];
  /** the arguments of every `op` instruction, in order */
  all(op: string): string[];
  /**
   * the exec-form arguments of the last `op` instruction (after any `--flag=value` options and, for HEALTHCHECK, `CMD`)
   */
  execForm(op: string): string[];
}

export function parseDockerfile(text: string): Dockerfile {
  const instructions = text
    .split('\n')
    .filter((l) => !l.trim().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim().replace(/\s+/g, ' '))
    .filter((l) => l !== '');
  const all = (op: string): string[] =>
    instructions.filter((l) => l.startsWith(`${op} `)).map((l) => l.slice(op.length + 1).trim());
  return {
    instructions,
    all,
    execForm(op: string): string[] {
      const last = all(op).at(-1);
      if (last === undefined) throw new Error(`no ${op} instruction`);
      const json = last.replace(/^(?:--[a-z-]+=\S+ )*(?:CMD )?/, '');
      const parsed: unknown = JSON.parse(json);
      if (!Array.isArray(parsed) || !parsed.every((x): x is string => typeof x === 'string'))
        throw new Error(`${op} is not in exec form (a JSON list of strings)`);
      return parsed;
    },
  };
}
