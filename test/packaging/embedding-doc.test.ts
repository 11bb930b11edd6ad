// Every TypeScript example in docs/embedding.md compiles against the built package, as an embedder
// would write it: the page's fragments are checked by the TypeScript compiler with strict settings,
// each as a module of its own. The variables a fragment takes from its surroundings (the logger,
// the site's config, a CMDB) are declared for it with the types the page says they have; the
// public names it uses without importing them are imported for it. A renamed or removed export,
// or a changed signature, fails here before a reader finds out. The complete example
// (examples/embedding/two-sites.ts) runs for real in embedding.network.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(join(root, 'docs', 'embedding.md'), 'utf8');
const indexSource = readFileSync(join(root, 'packages', 'core', 'src', 'index.ts'), 'utf8');

/** What the page's fragments take from their surroundings, with the types the page gives them. */
const SURROUNDINGS: Readonly<Record<string, string>> = {
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
};

function publicNames(): string[] {
  const names: string[] = [];
  for (const m of indexSource.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of (m[1] ?? '').split(',')) {
      const name = part.trim().replace(/^type\s+/, '');
      if (name !== '') names.push(name);
    }
  }
  return names;
}

/** The names a fragment declares or imports itself. */
function ownNames(code: string): Set<string> {
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
  return own;
}

const uses = (code: string, name: string): boolean =>
  new RegExp(`(?<![\\w$.'])${name.replace('$', '\\$')}\\b`).test(code);

/** The fragment as a module: what it takes from outside declared, the public names it uses imported. */
function asModule(code: string): string {
  const own = ownNames(code);
  const imported = publicNames().filter((n) => !own.has(n) && uses(code, n));
  const declared = Object.entries(SURROUNDINGS).filter(([n]) => !own.has(n) && uses(code, n));
  return [
    "import type * as core from '@choria-provisioner/core';",
    ...(imported.length > 0 ? [`import { ${imported.join(', ')} } from '@choria-provisioner/core';`] : []),
    ...declared.map(([n, type]) => `declare const ${n}: ${type};`),
    code,
    'export {};',
  ].join('\n');
}

const fragments = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((m, i) => ({
  name: join(root, 'docs', `embedding-example-${i + 1}.mts`),
  line: page.slice(0, m.index).split('\n').length,
  text: asModule(m[1] ?? ''),
}));

function diagnostics(): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    skipLibCheck: true,
    noUnusedLocals: false,
  };
  const host = ts.createCompilerHost(options);
  const byName = new Map(fragments.map((f) => [f.name, f.text]));
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (file) => byName.get(file) ?? readFile(file);
  host.fileExists = (file) => byName.has(file) || ts.sys.fileExists(file);
  host.getSourceFile = (file, language, onError, create) => {
    const text = byName.get(file);
    return text !== undefined
      ? ts.createSourceFile(file, text, language, true)
      : getSourceFile(file, language, onError, create);
  };
  const program = ts.createProgram([...byName.keys()], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const fragment = fragments.find((f) => f.name === d.file?.fileName);
    const where =
      fragment === undefined ? (d.file?.fileName ?? '') : `docs/embedding.md example at line ${fragment.line}`;
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe('docs/embedding.md examples', () => {
  it('are there: the page shows its API in TypeScript', () => {
    expect(fragments.length).toBeGreaterThanOrEqual(7);
  });

  it('compile against the built package, each as a module of its own', { timeout: 60_000 }, () => {
    expect(diagnostics()).toEqual([]);
  });

  it('would fail on a name the package does not export', { timeout: 60_000 }, () => {
    const broken = {
      name: join(root, 'docs', 'embedding-example-broken.mts'),
      line: 0,
      text: asModule("import { ksuid } from '@choria-provisioner/core';\nksuid();"),
    };
    fragments.push(broken);
    try {
      expect(diagnostics().join('\n')).toContain("has no exported member 'ksuid'");
    } finally {
      fragments.pop();
    }
  });
});
