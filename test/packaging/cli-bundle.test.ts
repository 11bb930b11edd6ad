// The CLI's bundle runs with the V8 code cache the build made (packages/cli/scripts/bundle-loader.js):
// the Node.js that built it takes the cache, and a cache V8 rejects (another Node.js version,
// other flags, a damaged file) only means the bundle is compiled as usual.
import { execFileSync } from 'node:child_process';
import { isAscii } from 'node:buffer';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeCliConfig } from '@choria-provisioner/test-support/settings';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const bundleDir = join(repoRoot, 'packages', 'cli', 'dist', 'bundle');

/** Imports the loader in a fresh Node.js process and runs `args`; what it printed, and whether the cache was taken. */
function runLoader(loader: string, args: readonly string[]): { cacheUsed: boolean; out: string } {
  const script = `
    const m = await import(${JSON.stringify(pathToFileURL(loader).href)});
    let out = '';
    const code = await m.main(${JSON.stringify(args)}, { out: (t) => { out += t; }, err: (t) => { out += t; } });
    process.stdout.write(JSON.stringify({ cacheUsed: m.codeCacheUsed, code, out }));
  `;
  const result = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { cacheUsed: boolean; code: number; out: string };
  expect(result.code, result.out).toBe(0);
  return result;
}

describe('the CLI bundle and its code cache', () => {
  let scratch: string;
  let config: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'cpts-bundle-cache-'));
    config = writeCliConfig(scratch, 'bundle');
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('is built with a code cache that the same Node.js takes', () => {
    expect(existsSync(join(bundleDir, 'cli.cjs.cache')), 'packages/cli/dist/bundle/cli.cjs.cache is missing: run "npm run build" first').toBe(true);
    const { cacheUsed, out } = runLoader(join(bundleDir, 'cli.js'), ['validate', '--config', config]);
    expect(out).toContain('provisioner.yaml: OK');
    expect(out).toMatch(/site: +bundle/);
    expect(cacheUsed).toBe(true);
  });

  it('is ASCII only, so that the loader reads it as one-byte text without decoding UTF-8', () => {
    expect(isAscii(readFileSync(join(bundleDir, 'cli.cjs')))).toBe(true);
  });

  it('reads a bundle that is not ASCII only as UTF-8', () => {
    const dir = join(scratch, 'utf8');
    mkdirSync(dir);
    try {
      for (const f of ['cli.js', 'cli.cjs']) copyFileSync(join(bundleDir, f), join(dir, f));
      // a bundle whose main prints a non-ASCII text first: read as Latin-1 it would print "Âµs"
      appendFileSync(join(dir, 'cli.cjs'), '\nconst built = module.exports;\nmodule.exports = { ...built, main: (args, io, guard) => { io.out("µs\\n"); return built.main(args, io, guard); } };\n');
      const { out } = runLoader(join(dir, 'cli.js'), ['validate', '--config', config]);
      expect(out.split('\n')[0]).toBe('µs');
      expect(out).toContain('provisioner.yaml: OK');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs as well with a cache V8 rejects, or none', () => {
    const dir = join(scratch, 'copy');
    mkdirSync(dir);
    try {
      for (const f of ['cli.js', 'cli.cjs']) copyFileSync(join(bundleDir, f), join(dir, f));
      writeFileSync(join(dir, 'cli.cjs.cache'), Buffer.alloc(4096, 7));
      expect(runLoader(join(dir, 'cli.js'), ['validate', '--config', config]).cacheUsed).toBe(false);
      rmSync(join(dir, 'cli.cjs.cache'));
      expect(runLoader(join(dir, 'cli.js'), ['validate', '--config', config]).cacheUsed).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The bundle starts process helpers with the same companions as the library: the Python one,
// copied beside the bundle by the build, by default; the Node one when told so. The helper names
// its parent process, which is the companion that started it.
describe('the CLI bundle starts process helpers', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'cpts-bundle-spawner-'));
    const helper = join(scratch, 'parent.sh');
    writeFileSync(helper, `#!/bin/sh\ncat >/dev/null\nprintf '{"configuration":{"plugin.choria.server.provision":"false","started_by":"%s"}}' "$(cat /proc/$PPID/comm)"\n`, { mode: 0o755 });
    writeFileSync(join(scratch, 'request.json'), JSON.stringify({ identity: 'n1.example.net', csr: null, ed25519_pubkey: null, inventory: '{}', jwt: null }));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it.each([
    ['auto', /^python3/],
    ['node', /^node/],
  ])('helper_spawner %s', (setting, parent) => {
    expect(existsSync(join(bundleDir, 'spawner-child.py')), 'packages/cli/dist/bundle/spawner-child.py is missing: run "npm run build" first').toBe(true);
    const dir = join(scratch, setting);
    mkdirSync(dir);
    const config = writeCliConfig(dir, 'spawn');
    writeFileSync(config, readFileSync(config, 'utf8').replace('helper: /bin/true', `helper: ${join(scratch, 'parent.sh')}\nhelper_spawner: ${setting}`));
    const { out } = runLoader(join(bundleDir, 'cli.js'), ['helper', 'test', '--config', config, '--request', join(scratch, 'request.json'), '--json']);
    const startedBy = /"started_by": ?"([^"]*)"/.exec(out)?.[1];
    expect(startedBy, out).toMatch(parent);
  });
});
