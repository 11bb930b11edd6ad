// Where a test lives and what it is called follow from what it uses (the README's "Tests"): a
// test of one package lives in that package and reaches no other package's files; a test under
// test/ uses several packages or checks the repository; a test that needs a broker is named
// `*.network.test.ts`, so `vitest --project unit` and `--project network` split the suite.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist') continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...testFiles(path));
    else if (e.name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const files = [...testFiles(join(repoRoot, 'packages')), ...testFiles(join(repoRoot, 'test'))].map((f) => ({
  path: relative(repoRoot, f),
  text: readFileSync(f, 'utf8'),
}));

// a broker of its own (the harness, a simulated fleet) or a command that starts one
const NEEDS_BROKER = new RegExp(
  [
    'startNatsServer\\(',
    'new FleetHarness\\(',
    'SimulatedFleet\\.start\\(',
    'runDemo\\(',
    "'demo', '--(?:mode|nodes)",
  ].join('|'),
);
const PACKAGES = ['core', 'simulator', 'cli'] as const;

/** The packages a test uses: imports by name or by path, and the simulated-fleet support (core and simulator). */
function packagesUsed(text: string): Set<string> {
  const used = new Set<string>();
  for (const p of PACKAGES)
    if (new RegExp(`@choria-provisioner/${p}\\b|packages/${p}/|'packages', '${p}'`).test(text)) used.add(p);
  if (text.includes('@choria-provisioner/test-support/fleet')) for (const p of ['core', 'simulator']) used.add(p);
  return used;
}

describe('test layout', () => {
  it('finds the tests', () => {
    expect(files.length).toBeGreaterThan(60);
  });

  it('names exactly the tests that need a broker *.network.test.ts', () => {
    const unnamed = files
      .filter((f) => NEEDS_BROKER.test(f.text) && !f.path.endsWith('.network.test.ts'))
      .map((f) => f.path);
    const misnamed = files
      .filter((f) => !NEEDS_BROKER.test(f.text) && f.path.endsWith('.network.test.ts'))
      .map((f) => f.path);
    expect(unnamed).toEqual([]);
    expect(misnamed).toEqual([]);
    expect(files.filter((f) => f.path.endsWith('.network.test.ts')).length).toBeGreaterThan(15);
  });

  it('keeps package tests inside their package', () => {
    const reaching = files
      .filter((f) => f.path.startsWith('packages/'))
      .filter((f) => /from '(?:\.\.\/)+(?:\.\.\/)(?:packages\/|test\/)|from '(?:\.\.\/){3,}[a-z-]+\/src\//.test(f.text))
      .map((f) => f.path);
    expect(reaching).toEqual([]);
  });

  it('keeps under test/e2e only tests that use several packages', () => {
    const single = files
      .filter((f) => f.path.startsWith('test/e2e/'))
      .filter((f) => packagesUsed(f.text).size < 2)
      .map((f) => `${f.path}: ${[...packagesUsed(f.text)].join(', ') || 'none'}`);
    expect(single).toEqual([]);
  });
});
