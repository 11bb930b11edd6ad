// Reads a Dockerfile the way the tests need it: instructions with continuation lines joined and
// comments dropped, by operation, with exec-form (JSON list) arguments parsed.
export interface Dockerfile {
  /** every instruction, e.g. `FROM node:24-slim AS install` */
  readonly instructions: readonly string[];
  /** the arguments of every `op` instruction, in order */
  all(op: string): string[];
  /**
   * the exec-form arguments of the last `op` instruction (after any `--flag=value` options and, for HEALTHCHECK, `CMD`)
   */
  execForm(op: string): string[];
  /**
   * The text of a file a RUN instruction writes with `printf '%s\n' 'line' ... > path` (single-quoted
   * lines only), or undefined when no RUN writes `path`.
   */
  writtenFile(path: string): string | undefined;
}

/**
 * What the container of Choria's own Helm chart (choria-io/helm, chart `provisioner`) asks of the
 * image: this command and these arguments (the files from a ConfigMap under config/), the helper
 * from a ConfigMap at /helper (upstream's sample helper is a Ruby script for /usr/bin/ruby), TLS
 * material and the JWT signer from Secrets under ssl/ and signer/, user and group 2048. This
 * project's chart (deploy/helm/choria-provisioner) uses the same paths.
 */
export const CHORIA_CHART = {
  command: ['/usr/sbin/choria-provisioner'],
  args: [
    '--config',
    '/etc/choria-provisioner/config/choria-provisioner.yaml',
    '--choria-config',
    '/etc/choria-provisioner/config/client.cfg',
  ],
  mounts: {
    config: '/etc/choria-provisioner/config',
    helper: '/helper',
    ssl: '/etc/choria-provisioner/ssl',
    signer: '/etc/choria-provisioner/signer',
  },
  uid: 2048,
} as const;

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
    writtenFile(path: string): string | undefined {
      const target = ` > ${path}`;
      const run = all('RUN').find((r) => r.includes(target));
      if (run === undefined) return undefined;
      const command = run.slice(0, run.indexOf(target));
      const prefix = "printf '%s\\n' ";
      if (!command.startsWith(prefix)) throw new Error(`${path} is not written with ${prefix}'line' ...`);
      const words = command.slice(prefix.length);
      if (!/^(?:'[^']*' ?)+$/.test(words)) throw new Error(`the lines of ${path} are not all single-quoted`);
      return [...words.matchAll(/'([^']*)'/g)].map((m) => `${m[1] ?? ''}\n`).join('');
    },
  };
}
