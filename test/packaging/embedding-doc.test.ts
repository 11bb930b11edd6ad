// Every TypeScript example in docs/embedding.md compiles against the built package, as an embedder
// would write it: the page's fragments are checked by the TypeScript compiler with strict settings,
// each as a module of its own. The variables a fragment takes from its surroundings (the logger,
// the site's config, a CMDB) are declared for it with the types the page says they have; the
// public names it uses without importing them are imported for it. A renamed or removed export,
// or a changed signature, fails here before a reader finds out. The examples run, one after
// another, in embedding-doc.network.test.ts; the complete example (examples/embedding/two-sites.ts)
// runs in embedding.network.test.ts.
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import {
  SURROUNDINGS,
  fragments as pageFragments,
  publicNamesUsed,
  root,
  surroundingsUsed,
} from './embedding-doc-page.js';

/** The fragment as a module: what it takes from outside declared, the public names it uses imported. */
function asModule(code: string): string {
  const imported = publicNamesUsed(code);
  return [
    "import type * as core from '@choria-provisioner/core';",
    ...(imported.length > 0 ? [`import { ${imported.join(', ')} } from '@choria-provisioner/core';`] : []),
    ...surroundingsUsed(code).map((n) => `declare const ${n}: ${SURROUNDINGS[n] ?? 'unknown'};`),
    code,
    'export {};',
  ].join('\n');
}

const fragments = pageFragments.map((f) => ({
  name: join(root, 'docs', `embedding-example-${f.index}.mts`),
  line: f.line,
  text: asModule(f.code),
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
