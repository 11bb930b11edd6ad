#!/usr/bin/env node
// Fails (exit 1) when the source imports break the layering the README shows: an import cycle
// between any two modules, or a module importing from a layer above its own. Reads the
// TypeScript sources as text (every `import`/`export ... from` with a relative path, `import type`
// included: a type dependency is a dependency for a reader too).
//
//   core:  util -> config -> choria -> host -> metrics -> provisioner -> monitor -> (index, internal)
//   packages: core <- simulator (none of core), core <- cli (the public API only);
//   test-support (private) may use them all, and nothing shipped uses it
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Layers of packages/core/src, lowest first; a module may import its own layer and those below. */
export const CORE_LAYERS = ['util', 'config', 'choria', 'host', 'metrics', 'provisioner', 'monitor', '.'];

function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (/\.ts$/.test(entry) && !entry.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g;

/** `{ from, to, spec }` for every import in `files` (relative ones resolved to files). */
export function importsOf(files) {
  const edges = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2];
      if (spec === undefined) continue;
      if (spec.startsWith('.')) {
        const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
        edges.push({ from: file, to: target, spec });
      } else {
        edges.push({ from: file, to: undefined, spec });
      }
    }
  }
  return edges;
}

function layerOf(file, srcDir) {
  const rel = relative(srcDir, file);
  const top = rel.includes('/') ? rel.slice(0, rel.indexOf('/')) : '.';
  return CORE_LAYERS.indexOf(top);
}

/** Cycles among the relative imports, each as a list of files. */
export function findCycles(edges) {
  const next = new Map();
  for (const e of edges) {
    if (e.to === undefined) continue;
    if (!next.has(e.from)) next.set(e.from, new Set());
    next.get(e.from).add(e.to);
  }
  const cycles = [];
  const state = new Map(); // 1 visiting, 2 done
  const stack = [];
  const visit = (n) => {
    state.set(n, 1);
    stack.push(n);
    for (const m of next.get(n) ?? []) {
      if (state.get(m) === 1) cycles.push([...stack.slice(stack.indexOf(m)), m]);
      else if (state.get(m) === undefined) visit(m);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of next.keys()) if (state.get(n) === undefined) visit(n);
  return cycles;
}

export function checkLayers(root = ROOT) {
  const problems = [];
  const rel = (f) => relative(root, f);
  const coreSrc = join(root, 'packages', 'core', 'src');
  const packages = ['core', 'simulator', 'cli', 'test-support']
    .map((p) => join(root, 'packages', p, 'src'))
    .filter((d) => {
      try {
        return statSync(d).isDirectory();
      } catch {
        return false;
      }
    });
  const edges = importsOf(packages.flatMap((d) => sourceFiles(d)));

  for (const cycle of findCycles(edges)) problems.push(`import cycle: ${cycle.map(rel).join(' -> ')}`);

  for (const e of edges) {
    const inCore = e.from.startsWith(coreSrc + '/');
    if (inCore && e.to !== undefined) {
      const a = layerOf(e.from, coreSrc);
      const b = layerOf(e.to, coreSrc);
      if (a < 0 || b < 0)
        problems.push(`${rel(e.from)}: ${e.spec} is outside the known layers ${CORE_LAYERS.join(', ')}`);
      else if (b > a)
        problems.push(`${rel(e.from)} (${CORE_LAYERS[a]}) imports ${e.spec} from the layer above (${CORE_LAYERS[b]})`);
    }
    const pkg = packages.find((d) => e.from.startsWith(d + '/'));
    if (pkg === undefined) continue;
    const name = relative(join(root, 'packages'), pkg).split('/')[0];
    if (e.to !== undefined && !e.to.startsWith(pkg + '/'))
      problems.push(`${rel(e.from)}: ${e.spec} reaches into another package's files; import the package by name`);
    if (name === 'simulator' && e.spec.startsWith('@choria-provisioner/core'))
      problems.push(`${rel(e.from)}: the simulator is written independently of the core and must not import it`);
    if (name === 'cli' && e.spec.startsWith('@choria-provisioner/core/'))
      problems.push(`${rel(e.from)}: the CLI uses the core's public API only, not ${e.spec}`);
    if (name !== 'test-support' && e.spec.startsWith('@choria-provisioner/test-support'))
      problems.push(`${rel(e.from)}: ${e.spec} is test support; a shipped package must not import it`);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // --root DIR: check another checkout (the tests use scratch trees with deliberate mistakes)
  const at = process.argv.indexOf('--root');
  const problems = checkLayers(at > 0 ? resolve(process.argv[at + 1] ?? '.') : ROOT);
  if (problems.length > 0) {
    process.stderr.write(
      `check-layers: ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`,
    );
    process.exit(1);
  }
  process.stdout.write('check-layers: no cycles, no upward imports\n');
}
