#!/usr/bin/env node
// Bundles the CLI into dist/bundle/ after tsc has built the packages. Why: a Node process loading
// the CLI from ~400 separate modules (ours and its dependencies') spends most of its start-up
// resolving, reading and compiling files; one bundle with its rarely used parts split off (the
// demo and its simulator load only for `demo`) starts in about two thirds of the time, which is
// what several instances started at once on a small machine wait for (BENCHMARKS.md,
// "Active/active").
//
// dist/bin.js stays the entry point everything names (package.json's bin, the service files): it
// imports dist/bundle/cli.js. tsc itself emits that file as a plain re-export (src/bundle/cli.ts),
// which this script replaces with the bundle; without this step the CLI still works, only slower.
//
// Two programs are started by file name relative to the module that starts them, so they are put
// beside the bundle: the process helpers' spawner (core) and the demo's event-loop watchdog worker
// (simulator). @peculiar/x509 stays outside: it is loaded, lazily, only for `features.pki` and the
// demo; so does reflect-metadata, which must be evaluated before it (imports of outside packages
// are evaluated before the code of the chunk that names them, so a bundled copy would come late).
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';

const cli = new URL('../', import.meta.url);
const outdir = fileURLToPath(new URL('dist/bundle/', cli));
const started = Date.now();

rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: {
    cli: fileURLToPath(new URL('src/bundle/cli.ts', cli)),
    'spawner-child': fileURLToPath(new URL('../core/dist/host/helper/spawner-child.js', cli)),
    'watchdog-worker': fileURLToPath(new URL('../simulator/dist/watchdog-worker.js', cli)),
  },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['@peculiar/x509', 'reflect-metadata'],
  // the CommonJS dependencies (winston, prom-client, yargs' helpers) call require(): give the ES
  // module chunks one
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  // beside the entry, not in a folder: code that finds files relative to its own module (the
  // spawner, the demo's helpers in ../../helpers/) must sit where dist/<folder>/*.js sat
  chunkNames: '[name]-[hash]',
  // the bundled packages' licence notices go with the code
  legalComments: 'eof',
  logLevel: 'warning',
});
process.stdout.write(`bundled the CLI into ${outdir} in ${Date.now() - started} ms\n`);
