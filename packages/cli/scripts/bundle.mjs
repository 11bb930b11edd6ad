#!/usr/bin/env node
// Bundles the CLI into dist/bundle/ after tsc has built the packages. Why: a Node process loading
// the CLI from ~400 separate modules (ours and its dependencies') spends most of its start-up
// resolving, reading and compiling files; one bundle starts in about two thirds of the time, and
// a V8 code cache of it (made where it runs, see scripts/bundle-loader.js; here for the Node.js
// that builds) takes another quarter off, which is what several instances started at once on a
// small machine wait for (BENCHMARKS.md, "Active/active": the start-up it describes).
//
// dist/bin.js stays the entry point everything names (package.json's bin, the service files): it
// imports dist/bundle/cli.js. tsc itself emits that file as a plain re-export (src/bundle/cli.ts),
// which this script replaces with the loader of the bundle (dist/bundle/cli.cjs); without this step
// the CLI still works, only slower.
//
// Two programs are started by file name relative to the module that starts them, so they are put
// beside the bundle: the process helpers' spawners (core: the Node one bundled, the Python one copied) and the demo's event-loop watchdog worker
// (simulator). @peculiar/x509 stays outside: it is loaded, lazily, only for `features.pki` and the
// demo; so does reflect-metadata, which must be evaluated before it.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { URL, fileURLToPath, pathToFileURL } from 'node:url';

const cli = new URL('../', import.meta.url);
const outdir = fileURLToPath(new URL('dist/bundle/', cli));
const started = Date.now();

const common = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  // the bundled packages' licence notices go with the code
  legalComments: 'eof',
  logLevel: 'warning',
};

rmSync(outdir, { recursive: true, force: true });
// The CLI: one CommonJS file, so that scripts/bundle-loader.js can run it with a V8 code cache
// (see there). The demo and its simulator are in it too, but CommonJS bundles evaluate a module
// only when it is first required, so only `demo` runs them.
await build({
  ...common,
  entryPoints: { cli: fileURLToPath(new URL('src/bundle/cli.ts', cli)) },
  outdir,
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  external: ['@peculiar/x509', 'reflect-metadata'],
  // code that finds files relative to its own module (the spawner, the demo's helpers in
  // ../../helpers/) gets the bundle's own URL: it sits where dist/<folder>/*.js sat
  define: { 'import.meta.url': '__bundleUrl' },
  banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
});
// ASCII only, so that the loader reads it without decoding UTF-8 (see there). esbuild already
// escapes every non-ASCII character in code; what it leaves is in comments it keeps (a `µ` in a
// dependency's, a `…` in ours). Each UTF-16 unit of those becomes its \u escape: in a comment only
// text, and in code it would spell the same character.
const bundleFile = join(outdir, 'cli.cjs');
const asciiOnly = readFileSync(bundleFile, 'utf8').replace(
  /[\u0080-\uffff]/g,
  (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`,
);
writeFileSync(bundleFile, asciiOnly);
// The two programs started by file name, beside the bundle, as ES modules of their own.
await build({
  ...common,
  entryPoints: {
    'spawner-child': fileURLToPath(new URL('../core/dist/host/helper/spawner-child.js', cli)),
    'watchdog-worker': fileURLToPath(new URL('../simulator/dist/watchdog-worker.js', cli)),
  },
  outdir,
  format: 'esm',
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
  },
});
// the helper spawner's Python companion, found beside the module that starts it
copyFileSync(
  fileURLToPath(new URL('../core/dist/host/helper/spawner-child.py', cli)),
  join(outdir, 'spawner-child.py'),
);
// dist/bundle/cli.js, what dist/bin.js imports: the loader in place of tsc's re-export, told the
// bundle's content hash (its code caches are named by it)
const loader = join(outdir, 'cli.js');
const bundleId = createHash('sha256').update(readFileSync(bundleFile)).digest('hex').slice(0, 16);
writeFileSync(
  loader,
  readFileSync(fileURLToPath(new URL('scripts/bundle-loader.js', cli)), 'utf8').replace(
    "'__BUNDLE_ID__'",
    `'${bundleId}'`,
  ),
);

// The code cache of the Node.js that builds, so that the first start from this build has one too:
// the loader writes it beside the bundle as this run exits, after compiling what every start-up
// needs (yargs, reading and checking a configuration). Any other Node.js makes its own where it runs.
const scratch = mkdtempSync(join(tmpdir(), 'cpts-bundle-'));
try {
  const config = join(scratch, 'provisioner.yaml');
  writeFileSync(config, 'site: build\ntoken: build\nhelper: /bin/true\nchoria_insecure: true\n');
  const warmUp = `
    const m = await import(${JSON.stringify(pathToFileURL(loader).href)});
    const quiet = { out() {}, err() {} };
    await m.main(['validate', '--config', ${JSON.stringify(config)}], quiet);
    await m.main(['--help'], quiet);
  `;
  const env = { ...process.env };
  delete env.NODE_DISABLE_COMPILE_CACHE;
  execFileSync(process.execPath, ['--input-type=module', '-e', warmUp], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env,
  });
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
const caches = readdirSync(outdir).filter((f) => f.endsWith('.cache'));
if (caches.length === 0)
  process.stderr.write(
    `bundle: no code cache was written into ${outdir} (is it writable?); the CLI makes one where it runs\n`,
  );
process.stdout.write(`bundled the CLI into ${outdir} in ${Date.now() - started} ms\n`);
