// The TypeScript examples of docs/embedding.md, as the two tests of that page see them: one compiles
// every example against the built package (embedding-doc.test.ts), the other runs them one after
// another against brokers with simulated fleets (embedding-doc.network.test.ts).
//
// An example is a fragment of a program: it uses the library's public names without always
// importing them, and takes a few variables from its surroundings (the logger, the site's config,
// a CMDB). SURROUNDINGS names those variables with the types the page gives them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const root = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(join(root, 'docs', 'embedding.md'), 'utf8');
const indexSource = readFileSync(join(root, 'packages', 'core', 'src', 'index.ts'), 'utf8');

/** What the page's fragments take from their surroundings, with the types the page gives them. */
export const SURROUNDINGS: Readonly<Record<string, string>> = {
  logger: 'core.Logger',
  config: 'core.ProvisionerConfig',
  choria: 'core.ChoriaSettings',
  registry: "import('prom-client').Registry",
  helper: 'core.HelperFunction',
  provisioners: 'core.Provisioner[]',
  monitor: 'core.MonitorServer',
  configs: 'Record<string, core.ProvisionerConfig>',
  settings: 'Record<string, core.ChoriaSettings>',
  helperFor: '(site: string) => core.HelperFunction',
  cmdb: '{ lookup(identity: string, o: { signal: AbortSignal }): Promise<{ brokers: string[] } | undefined> }',
  request: 'core.HelperRequest',
  signal: 'AbortSignal',
};

export interface Fragment {
  /** 1-based, in page order */
  readonly index: number;
  /** the line of docs/embedding.md the fragment starts on */
  readonly line: number;
  readonly code: string;
}

export const fragments: readonly Fragment[] = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((m, i) => ({
  index: i + 1,
  line: page.slice(0, m.index).split('\n').length,
  code: m[1] ?? '',
}));

/** The names the package root exports, values and types alike. */
export function publicNames(): string[] {
  const names: string[] = [];
  for (const m of indexSource.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of (m[1] ?? '').split(',')) {
      const name = part.trim().replace(/^type\s+/, '');
      if (name !== '') names.push(name);
    }
  }
  return names;
}

/** The names a fragment declares (at any depth) or imports itself. */
export function ownNames(code: string): Set<string> {
  const own = new Set<string>();
  for (const m of code.matchAll(/\b(?:const|let|var|function|class)[ \t]+([A-Za-z_$][\w$]*)/g)) own.add(m[1] ?? '');
  for (const m of code.matchAll(/\b(?:const|let|var)[ \t]+\{([^}]*)\}/g)) {
    for (const part of (m[1] ?? '').split(',')) own.add(part.split(':').pop()?.trim() ?? '');
  }
  for (const m of code.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of (m[1] ?? '').split(','))
      own.add(
        part
          .replace(/\/\*.*?\*\//g, '')
          .replace(/^\s*type\s+/, '')
          .trim(),
      );
  }
  own.delete('');
  return own;
}

/** The names a fragment declares at its top level: what a module made of it can export. */
export function topLevelNames(code: string): string[] {
  const file = ts.createSourceFile('fragment.ts', code, ts.ScriptTarget.ES2022, true);
  const names: string[] = [];
  const bind = (name: ts.BindingName): void => {
    if (ts.isIdentifier(name)) names.push(name.text);
    else for (const e of name.elements) if (!ts.isOmittedExpression(e)) bind(e.name);
  };
  for (const s of file.statements) {
    if (ts.isVariableStatement(s)) for (const d of s.declarationList.declarations) bind(d.name);
    else if ((ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s)) && s.name !== undefined) names.push(s.name.text);
  }
  return names;
}

export const uses = (code: string, name: string): boolean =>
  new RegExp(`(?<![\\w$.'])${name.replace('$', '\\$')}\\b`).test(code);

/** The public names a fragment uses without importing them itself. */
export function publicNamesUsed(code: string): string[] {
  const own = ownNames(code);
  return publicNames().filter((n) => !own.has(n) && uses(code, n));
}

/** The surroundings a fragment uses without declaring them itself. */
export function surroundingsUsed(code: string): string[] {
  const own = ownNames(code);
  return Object.keys(SURROUNDINGS).filter((n) => !own.has(n) && uses(code, n));
}
