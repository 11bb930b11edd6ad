#!/usr/bin/env node
// Writes a release directory: the `npm pack` tarballs of the three packages, a package.json that
// depends on them and a package-lock.json cut from the repository's, so `npm ci` there installs
// exactly the versions the repository tests, from the tarballs (what the published packages would
// give), with or without a registry (the npm cache holds everything `npm ci` fetched here). The
// container image (examples/docker/Dockerfile) builds from it; so do the installed-package tests.
//   node scripts/pack-release.mjs [--out DIR]     (default: release/; build first: npm run build)
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The packages a release holds, with their repository folders. */
export const RELEASE_PACKAGES = [
  { name: '@choria-provisioner/core', dir: 'packages/core' },
  { name: '@choria-provisioner/simulator', dir: 'packages/simulator' },
  { name: 'choria-provisioner', dir: 'packages/cli' },
];

/** Where Node's resolution finds `name` from the package at lockfile path `from` ('' for the root). */
function locate(entries, from, name) {
  let base = from;
  for (;;) {
    const candidate = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
    if (entries[candidate] !== undefined) return candidate;
    if (base === '') return undefined;
    const at = base.lastIndexOf('node_modules/');
    base = at > 0 ? base.slice(0, at - 1) : '';
  }
}

/**
 * The manifest and lockfile of a project depending on `tarballs` (name -> { dir, file } with file
 * inside `out`): the tarballs' dependency closure, taken from the repository lock.
 */
export function releaseManifests(repoLock, tarballs) {
  const repo = repoLock.packages;
  const packages = {};
  const dependencies = {};
  const pending = [];
  for (const [name, { dir, file }] of tarballs) {
    if (Object.keys(repo).some((k) => k.startsWith(`${dir}/node_modules/`))) {
      throw new Error(
        `${dir} pins dependency versions of its own (${dir}/node_modules in package-lock.json), which a release cannot express`,
      );
    }
    const { name: _name, ...entry } = repo[dir] ?? {};
    const spec = `file:./${file}`;
    packages[`node_modules/${name}`] = {
      ...entry,
      resolved: spec,
      integrity: `sha512-${createHash('sha512')
        .update(readFileSync(tarballs.get(name).path))
        .digest('base64')}`,
    };
    dependencies[name] = spec;
    // a workspace's dependencies are hoisted in the repository: they resolve from its root
    for (const dep of Object.keys(entry.dependencies ?? {})) pending.push(['', dep]);
  }
  while (pending.length > 0) {
    const [from, dep] = pending.pop();
    if (tarballs.has(dep)) continue;
    const at = locate(repo, from, dep);
    if (at === undefined)
      throw new Error(`${dep} (needed by ${from === '' ? 'a package' : from}) is not in package-lock.json`);
    if (packages[at] !== undefined) continue;
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = repo[at];
    packages[at] = entry;
    for (const d of [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {})])
      pending.push([at, d]);
  }
  const manifest = {
    name: 'choria-provisioner-release',
    version: JSON.parse(readFileSync(join(ROOT, 'packages/cli/package.json'), 'utf8')).version,
    private: true,
    dependencies,
  };
  const sorted = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a < b ? -1 : 1)));
  const lock = {
    name: manifest.name,
    version: manifest.version,
    lockfileVersion: 3,
    requires: true,
    packages: { '': { name: manifest.name, version: manifest.version, dependencies }, ...sorted },
  };
  return { manifest, lock };
}

/** Packs the built packages into `out` (emptied first) and writes its package.json and package-lock.json. */
export function packRelease(out) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const tarballs = new Map();
  for (const { name, dir } of RELEASE_PACKAGES) {
    const stdout = execFileSync(
      'npm',
      ['pack', '--json', '--ignore-scripts', '--workspace', name, '--pack-destination', out],
      { cwd: ROOT, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
    );
    const [packed] = JSON.parse(stdout);
    if (packed === undefined) throw new Error(`npm pack of ${name} printed no package`);
    tarballs.set(name, { dir, file: packed.filename, path: join(out, packed.filename) });
  }
  const repoLock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
  const { manifest, lock } = releaseManifests(repoLock, tarballs);
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(join(out, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
  return { out, tarballs: [...tarballs.values()].map((t) => t.file), packages: Object.keys(lock.packages).length - 1 };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out');
  const out = resolve(at > 0 ? (process.argv[at + 1] ?? 'release') : join(ROOT, 'release'));
  const r = packRelease(out);
  process.stdout.write(`pack-release: ${r.tarballs.join(', ')} and a lockfile of ${r.packages} packages in ${r.out}\n`);
}
