// What `npm pack` puts into each package's tarball (docs/install.md, "What the packages contain"):
// package.json, a README/LICENSE when present, and the built dist/ (JavaScript and declarations, no
// source maps); never sources, tests or build state. The entry points named in package.json must be
// in it, and everything the packed JavaScript imports must be packed or declared as a dependency.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

const PACKAGES = [
  { name: '@choria-provisioner/core', dir: 'packages/core', entries: ['dist/index.js', 'dist/index.d.ts'] },
  {
    name: 'choria-provisioner',
    dir: 'packages/cli',
    entries: ['dist/bin.js', 'helpers/pool-helper.mjs', 'helpers/ed25519-helper.mjs', 'helpers/x509-ca-helper.mjs'],
  },
  {
    name: '@choria-provisioner/simulator',
    dir: 'packages/simulator',
    entries: ['dist/index.js', 'dist/index.d.ts', 'dist/bin.js'],
  },
] as const;

interface PackResult {
  files: string[];
}

function parsePackJson(stdout: string, name: string): PackResult {
  const parsed: unknown = JSON.parse(stdout);
  if (!Array.isArray(parsed) || parsed.length !== 1)
    throw new Error(`npm pack --json for ${name} did not print one package: ${stdout.slice(0, 200)}`);
  const first: unknown = parsed[0];
  const files = typeof first === 'object' && first !== null ? (first as Record<string, unknown>)['files'] : undefined;
  if (!Array.isArray(files)) throw new Error(`npm pack --json for ${name} has no files list`);
  return {
    files: files.map((f: unknown) => {
      const path = typeof f === 'object' && f !== null ? (f as Record<string, unknown>)['path'] : undefined;
      if (typeof path !== 'string') throw new Error(`npm pack --json for ${name} lists a file without a path`);
      return path;
    }),
  };
}

async function pack(name: string): Promise<string[]> {
  // --ignore-scripts: a dry run must not trigger prepack/prepare builds.
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts', '--workspace', name], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  });
  return parsePackJson(stdout, name).files.sort();
}

// One `npm pack` per package for both tests (each takes about a second).
const packs = new Map<string, Promise<string[]>>();
function packedFiles(name: string): Promise<string[]> {
  let p = packs.get(name);
  if (p === undefined) {
    p = pack(name);
    packs.set(name, p);
  }
  return p;
}

function readManifest(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Record<string, unknown>;
}

/** Every path string in main/types/bin/exports, without a leading "./". */
function entryPoints(manifest: Record<string, unknown>): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(posix.normalize(v));
    else if (typeof v === 'object' && v !== null) Object.values(v).forEach(walk);
  };
  for (const key of ['main', 'types', 'bin', 'exports']) walk(manifest[key]);
  return [...new Set(out)].filter((p) => p !== 'package.json');
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

// the CLI also ships the example helpers its demo runs (helpers/, copied from examples/ by the build)
const ALLOWED = (p: string): boolean =>
  p === 'package.json' ||
  /^(README|LICENSE|LICENCE|NOTICE)(\.[a-z]+)?$/i.test(p) ||
  p.startsWith('dist/') ||
  /^helpers\/[a-z0-9-]+\.mjs$/.test(p);
// (a V8 code cache fits only the Node.js that made it: the CLI makes its own where it runs)
const FORBIDDEN = [
  /(^|\/)src\//,
  /(^|\/)test\//,
  /\.test\.[cm]?[jt]s$/,
  /\.tsbuildinfo$/,
  /\.map$/,
  /(^|\/)tsconfig[^/]*\.json$/,
  /\.ts$/,
  /\.cache$/,
];
const DECLARATION = /\.d\.ts$/;

// `{import('./x.js').T}` is a type in a JSDoc comment (the CLI's bundle keeps its dependencies'
// comments), not an import: hence the dynamic import may not follow a `{`
function importSpecifiers(js: string): string[] {
  const out: string[] = [];
  for (const m of js.matchAll(
    /(?:^|[;\s])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[;\s])import\s*['"]([^'"]+)['"]|(?<!\{)import\(\s*['"]([^'"]+)['"]\s*\)/gm,
  )) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec !== undefined) out.push(spec);
  }
  return out;
}

const packageNameOf = (spec: string): string =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

describe.each(PACKAGES)('npm pack of $name', ({ name, dir, entries }) => {
  it('contains only package.json, README/LICENSE and dist/ (no sources, tests, build state or source maps) and every entry point', async () => {
    const distDir = join(root, dir, 'dist');
    expect(existsSync(distDir), `${dir}/dist is missing: run "npm run build" first`).toBe(true);
    const files = await packedFiles(name);

    expect(files.filter((p) => !ALLOWED(p))).toEqual([]);
    for (const re of FORBIDDEN)
      expect(
        files.filter((p) => re.test(p) && !DECLARATION.test(p)),
        String(re),
      ).toEqual([]);
    expect(files).toContain('package.json');

    const manifest = readManifest(dir);
    for (const entry of [...entries, ...entryPoints(manifest)])
      expect(files, `entry point ${entry} of ${name}`).toContain(entry);

    // Nothing built is left out: every emitted .js/.d.ts (and any data file) of dist/ ships; not
    // the CLI bundle's V8 code caches, which fit only the Node.js that made them and are made
    // where the CLI runs (packages/cli/scripts/bundle-loader.js)
    const built = filesUnder(distDir)
      .map((f) => relative(join(root, dir), f).split('\\').join('/'))
      .filter((p) => !p.endsWith('.map') && !/^dist\/bundle\/[^/]*\.cache$/.test(p));
    expect(built.filter((p) => !files.includes(p))).toEqual([]);
  });

  it('packs everything its JavaScript imports, and declares every package it imports as a dependency', async () => {
    const files = new Set(await packedFiles(name));
    const manifest = readManifest(dir);
    const deps = new Set(Object.keys((manifest['dependencies'] as Record<string, string> | undefined) ?? {}));
    const builtins = new Set(builtinModules);
    const unresolved: string[] = [];
    const undeclared = new Set<string>();
    const imported = new Set<string>();
    let relativeImports = 0;
    for (const file of [...files].filter((f) => f.endsWith('.js') || f.endsWith('.mjs'))) {
      for (const spec of importSpecifiers(readFileSync(join(root, dir, file), 'utf8'))) {
        if (spec.startsWith('.')) {
          relativeImports++;
          const target = posix.normalize(posix.join(dirname(file), spec));
          if (!files.has(target)) unresolved.push(`${file} -> ${spec}`);
        } else if (!spec.startsWith('node:') && !builtins.has(spec)) {
          imported.add(packageNameOf(spec));
          if (!deps.has(packageNameOf(spec))) undeclared.add(`${packageNameOf(spec)} (imported by ${file})`);
        }
      }
    }
    // the scan itself found the imports (a broken pattern would pass vacuously)
    expect(relativeImports).toBeGreaterThan(5);
    expect(imported.size).toBeGreaterThan(0);
    expect(unresolved).toEqual([]);
    expect([...undeclared]).toEqual([]);
  });
});
