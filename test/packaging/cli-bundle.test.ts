// The CLI's bundle runs with a V8 code cache made where it runs (packages/cli/scripts/bundle-loader.js):
// named by the bundle and by the Node.js and V8 flags that made it, so a cache made by another
// Node.js is never read, and one V8 rejects (a damaged file) only means the bundle is compiled as
// usual; a process without one writes one as it exits.
import { execFileSync } from 'node:child_process';
import { isAscii } from 'node:buffer';
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeCliConfig } from '@choria-provisioner/test-support/settings';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const bundleDir = join(repoRoot, 'packages', 'cli', 'dist', 'bundle');

interface LoaderRun {
  cacheUsed: boolean;
  cacheKey: string;
  out: string;
}

/** Imports the loader in a fresh Node.js process and runs `args`; what it printed, and whether a cache was taken. */
function runLoader(
  loader: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  nodeArgs: readonly string[] = [],
): LoaderRun {
  const script = `
    const m = await import(${JSON.stringify(pathToFileURL(loader).href)});
    let out = '';
    const code = await m.main(${JSON.stringify(args)}, { out: (t) => { out += t; }, err: (t) => { out += t; } });
    process.stdout.write(JSON.stringify({ cacheUsed: m.codeCacheUsed, cacheKey: m.cacheKey, code, out }));
  `;
  const result = JSON.parse(
    execFileSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', script], { encoding: 'utf8', env }),
  ) as LoaderRun & { code: number };
  expect(result.code, result.out).toBe(0);
  return result;
}

/** The code caches in `dir`. */
const cachesIn = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.cache'))
        .sort()
    : [];

describe('the CLI bundle and its code cache', () => {
  let scratch: string;
  let config: string;
  /** a copy of the built bundle without its caches, and an empty home for the user cache */
  let n = 0;
  const freshCopy = (): { dir: string; loader: string; env: NodeJS.ProcessEnv } => {
    const dir = join(scratch, `copy-${++n}`);
    mkdirSync(dir);
    for (const f of ['cli.js', 'cli.cjs']) copyFileSync(join(bundleDir, f), join(dir, f));
    const home = join(scratch, `home-${n}`);
    mkdirSync(home);
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CACHE_HOME: join(home, '.cache') };
    delete env['NODE_DISABLE_COMPILE_CACHE'];
    return { dir, loader: join(dir, 'cli.js'), env };
  };
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'cpts-bundle-cache-'));
    config = writeCliConfig(scratch, 'bundle');
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('makes its code cache on the first start with this Node.js, beside the bundle, and takes it from the second', () => {
    const { dir, loader, env } = freshCopy();
    const first = runLoader(loader, ['validate', '--config', config], env);
    expect(first.out).toContain('provisioner.yaml: OK');
    expect(first.out).toMatch(/site: +bundle/);
    expect(first.cacheUsed).toBe(false);
    expect(first.cacheKey).toBe(`${process.version}-${process.arch}-${first.cacheKey.split('-').at(-1) ?? ''}`);
    const made = cachesIn(dir);
    expect(made).toHaveLength(1);
    expect(made[0]).toMatch(new RegExp(`^cli\\.cjs\\.[0-9a-f]{16}\\.${first.cacheKey.replace(/\./g, '\\.')}\\.cache$`));
    const second = runLoader(loader, ['validate', '--config', config], env);
    expect(second.cacheUsed).toBe(true);
    expect(second.out).toContain('provisioner.yaml: OK');
    expect(cachesIn(dir)).toEqual(made);
  });

  it('never reads a cache made by another Node.js: it starts without, and makes its own', () => {
    const { dir, loader, env } = freshCopy();
    const { cacheKey } = runLoader(loader, ['validate', '--config', config], env);
    const [mine] = cachesIn(dir);
    expect(mine).toBeDefined();
    // the same bytes under the name another Node.js would give them (V8 might even take them: the
    // name alone keeps them out)
    const other = (mine as string).replace(cacheKey, `v22.23.5-${process.arch}-1234567890`);
    renameSync(join(dir, mine as string), join(dir, other));
    const run = runLoader(loader, ['validate', '--config', config], env);
    expect(run.cacheUsed).toBe(false);
    expect(run.out).toContain('provisioner.yaml: OK');
    expect(cachesIn(dir)).toEqual([other, mine].sort());
    expect(runLoader(loader, ['validate', '--config', config], env).cacheUsed).toBe(true);
  });

  it('never takes a cache made by a V8 configured otherwise (here: --no-opt), even one put under its own name', () => {
    const { dir, loader, env } = freshCopy();
    const other = runLoader(loader, ['validate', '--config', config], env, ['--no-opt']);
    const [theirs] = cachesIn(dir);
    expect(theirs).toContain(other.cacheKey);
    const mine = runLoader(loader, ['validate', '--config', config], env);
    expect(mine.cacheKey).not.toBe(other.cacheKey);
    expect(mine.cacheUsed).toBe(false);
    const ours = cachesIn(dir).find((f) => f !== theirs) as string;
    expect(ours).toContain(mine.cacheKey);
    // the other V8's cache under this one's name: V8 itself refuses it, and the start goes on
    rmSync(join(dir, ours));
    copyFileSync(join(dir, theirs as string), join(dir, ours));
    const forced = runLoader(loader, ['validate', '--config', config], env);
    expect(forced.cacheUsed).toBe(false);
    expect(forced.out).toContain('provisioner.yaml: OK');
    expect(runLoader(loader, ['validate', '--config', config], env).cacheUsed).toBe(true);
  });

  it('runs as well with a cache V8 rejects, and replaces it', () => {
    const { dir, loader, env } = freshCopy();
    runLoader(loader, ['validate', '--config', config], env);
    const [mine] = cachesIn(dir);
    writeFileSync(join(dir, mine as string), Buffer.alloc(4096, 7));
    const run = runLoader(loader, ['validate', '--config', config], env);
    expect(run.cacheUsed).toBe(false);
    expect(run.out).toContain('provisioner.yaml: OK');
    expect(readFileSync(join(dir, mine as string)).equals(Buffer.alloc(4096, 7))).toBe(false);
    expect(runLoader(loader, ['validate', '--config', config], env).cacheUsed).toBe(true);
  });

  it('writes its cache under the user cache directory when it cannot write beside the bundle, and runs without one where it can write nowhere', () => {
    const { dir, loader, env } = freshCopy();
    const userCache = join(env['XDG_CACHE_HOME'] as string, 'choria-provisioner');
    const run = (e: NodeJS.ProcessEnv): LoaderRun => runLoader(loader, ['validate', '--config', config], e);
    run(env);
    const [mine] = cachesIn(dir);
    // the cache's place beside the bundle taken by a directory: a rename onto it fails, for root too
    rmSync(join(dir, mine as string));
    mkdirSync(join(dir, mine as string, 'blocked'), { recursive: true });
    expect(run(env).cacheUsed).toBe(false);
    expect(cachesIn(userCache)).toEqual([mine]);
    expect(run(env).cacheUsed).toBe(true);
    const nowhere = { ...env, XDG_CACHE_HOME: '/proc/nowhere', HOME: '/proc/nowhere' };
    const without = run(nowhere);
    expect(without.cacheUsed).toBe(false);
    expect(without.out).toContain('provisioner.yaml: OK');
  });

  it('is ASCII only, so that the loader reads it as one-byte text without decoding UTF-8', () => {
    expect(isAscii(readFileSync(join(bundleDir, 'cli.cjs')))).toBe(true);
  });

  it('reads a bundle that is not ASCII only as UTF-8', () => {
    const { dir, loader, env } = freshCopy();
    // a bundle whose main prints a non-ASCII text first: read as Latin-1 it would print "Âµs"
    appendFileSync(
      join(dir, 'cli.cjs'),
      '\nconst built = module.exports;\nmodule.exports = { ...built, main: (args, io, guard) => { io.out("µs\\n"); return built.main(args, io, guard); } };\n',
    );
    const { out } = runLoader(loader, ['validate', '--config', config], env);
    expect(out.split('\n')[0]).toBe('µs');
    expect(out).toContain('provisioner.yaml: OK');
  });

  it('reads and writes no cache with NODE_DISABLE_COMPILE_CACHE=1', () => {
    const { dir, loader, env } = freshCopy();
    runLoader(loader, ['validate', '--config', config], env);
    expect(cachesIn(dir)).toHaveLength(1);
    const off = { ...env, NODE_DISABLE_COMPILE_CACHE: '1' };
    expect(runLoader(loader, ['validate', '--config', config], off).cacheUsed).toBe(false);
    rmSync(join(dir, cachesIn(dir)[0] as string));
    runLoader(loader, ['validate', '--config', config], off);
    expect(cachesIn(dir)).toEqual([]);
  });
});

// The bundle starts process helpers with the same companions as the library: the Python one,
// copied beside the bundle by the build, by default; the Node one when told so. The helper names
// the program its parent process runs (not its comm: Node 24 names its main thread, and with it
// the process's comm, "MainThread"), which is the companion that started it.
describe('the CLI bundle starts process helpers', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'cpts-bundle-spawner-'));
    const helper = join(scratch, 'parent.sh');
    writeFileSync(
      helper,
      `#!/bin/sh\ncat >/dev/null\nprintf '{"configuration":{"plugin.choria.server.provision":"false","started_by":"%s"}}' "$(basename "$(readlink /proc/$PPID/exe)")"\n`,
      { mode: 0o755 },
    );
    writeFileSync(
      join(scratch, 'request.json'),
      JSON.stringify({ identity: 'n1.example.net', csr: null, ed25519_pubkey: null, inventory: '{}', jwt: null }),
    );
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it.each([
    ['auto', /^python3/],
    ['node', /^node/],
  ])('helper_spawner %s', (setting, parent) => {
    expect(
      existsSync(join(bundleDir, 'spawner-child.py')),
      'packages/cli/dist/bundle/spawner-child.py is missing: run "npm run build" first',
    ).toBe(true);
    const dir = join(scratch, setting);
    mkdirSync(dir);
    const config = writeCliConfig(dir, 'spawn');
    writeFileSync(
      config,
      readFileSync(config, 'utf8').replace(
        'helper: /bin/true',
        `helper: ${join(scratch, 'parent.sh')}\nhelper_spawner: ${setting}`,
      ),
    );
    const { out } = runLoader(join(bundleDir, 'cli.js'), [
      'helper',
      'test',
      '--config',
      config,
      '--request',
      join(scratch, 'request.json'),
      '--json',
    ]);
    const startedBy = /"started_by": ?"([^"]*)"/.exec(out)?.[1];
    expect(startedBy, out).toMatch(parent);
  });
});
