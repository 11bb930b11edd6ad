// dist/bundle/cli.js, put there by scripts/bundle.mjs: runs the CLI's bundle (cli.cjs) with a V8
// code cache, so that a starting process loads compiled code instead of parsing and compiling
// ~2.9 MB of JavaScript. V8 takes a code cache only for a script it compiles, hence the bundle is
// CommonJS run through vm.Script. (Node's own module.enableCompileCache keeps only what is compiled
// before a module runs: `validate` took 0.24 s with it, 0.20 s with this cache made after a run,
// 0.28 s with none; medians of 15 on Node 24, 2-core VM.)
//
// The cache is made where it runs, never shipped: a code cache fits only the V8 that made it
// (version, flags, CPU features) and the bundle it was made for. Its file is named by both,
// cli.cjs.<bundle id>.<node version>-<arch>-<v8.cachedDataVersionTag()>.cache, so a cache made by
// another Node.js, with other V8 flags or for another build is never read. A process that found no
// cache for itself, or one V8 rejected, writes one when it exits (with the code compiled by then):
// beside the bundle when that directory is writable, else in $XDG_CACHE_HOME/choria-provisioner
// (~/.cache/choria-provisioner); neither writable, it runs without. A missing cache costs nothing
// but the time it saves. Only a file owned by this user or by the bundle's owner, writable by no
// one else, is read. NODE_DISABLE_COMPILE_CACHE=1 (Node's own switch) turns it off.
import { isAscii } from 'node:buffer';
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { URL, fileURLToPath } from 'node:url';
import { cachedDataVersionTag } from 'node:v8';
import { Script } from 'node:vm';

const file = fileURLToPath(new URL('./cli.cjs', import.meta.url));
// the build puts the bundle's content hash here; a bundle built otherwise is known by its size and time
const BUILT_ID = '__BUNDLE_ID__';

function bundleId() {
  if (!BUILT_ID.startsWith('__')) return BUILT_ID;
  const st = statSync(file);
  return `${st.size.toString(36)}-${Math.round(st.mtimeMs).toString(36)}`;
}

/** What a code cache must have been made by to fit: this Node.js and its V8's version, flags and CPU features. */
export const cacheKey = `${process.version}-${process.arch}-${cachedDataVersionTag()}`;

/** Where caches are looked for and written, in that order. */
function cacheDirs() {
  const dirs = [dirname(file)];
  try {
    dirs.push(join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'choria-provisioner'));
  } catch {
    // no home directory: beside the bundle only
  }
  return dirs;
}

const disabled = process.env.NODE_DISABLE_COMPILE_CACHE !== undefined && process.env.NODE_DISABLE_COMPILE_CACHE !== '';
const id = bundleId();
const cacheName = `cli.cjs.${id}.${cacheKey}.cache`;

/** The cache for this bundle and this V8, when one exists that is safe to read. */
function readCache() {
  if (disabled) return undefined;
  const owners = new Set([statSync(file).uid, process.getuid?.()]);
  for (const dir of cacheDirs()) {
    let fd;
    try {
      fd = openSync(join(dir, cacheName), 'r');
      const st = fstatSync(fd);
      // V8 runs what it finds in a cache: only one this user or the bundle's owner wrote, and no one else can
      if (!st.isFile() || !owners.has(st.uid) || (st.mode & 0o022) !== 0) continue;
      return { dir, data: readFileSync(fd) };
    } catch {
      // none here
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
  return undefined;
}

/**
 * The bundle's text. The build leaves it ASCII only (scripts/bundle.mjs), and ASCII read as Latin-1
 * is the same text in V8's one-byte form: no UTF-8 decoding, and half the bytes for V8 to hash
 * against the cache (a single non-ASCII character, even in a comment, makes the whole 2.9 MB string
 * two bytes a character). Anything else is read as UTF-8.
 */
function readSource(path) {
  const bytes = readFileSync(path);
  return isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
}

const cached = readCache();
// CommonJS's own wrapper, on the bundle's first line so that stack traces keep its line numbers
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${readSource(file)}\n})`, {
  filename: file,
  ...(cached === undefined ? {} : { cachedData: cached.data }),
});

/** Whether V8 took a code cache (false when there was none for this Node.js and bundle, or it was rejected). */
export const codeCacheUsed = cached !== undefined && !script.cachedDataRejected;

/**
 * Makes `dir` and its parent when missing (the user cache directory and ~/.cache), and no more: not
 * mkdir's recursive mode, which never gives up under /proc (Node 24.22).
 */
function makeDir(dir) {
  for (const d of [dirname(dir), dir]) {
    try {
      mkdirSync(d, { mode: 0o700 });
    } catch (err) {
      if (err?.code !== 'EEXIST') throw err;
    }
  }
}

/**
 * Writes the code cache of everything compiled so far, for this bundle and this V8: into the first
 * directory that takes it (a temporary file renamed into place, so a process starting meanwhile
 * reads a whole file or none). Caches of other builds of the bundle for this V8 in that directory
 * go: nothing can use them any more. Returns the file written, or undefined.
 */
export function writeCodeCache() {
  if (disabled) return undefined;
  const data = script.createCachedData();
  for (const dir of cacheDirs()) {
    const target = join(dir, cacheName);
    const temp = `${target}.${process.pid}.tmp`;
    try {
      makeDir(dir);
      writeFileSync(temp, data, { mode: 0o644 });
      renameSync(temp, target);
    } catch {
      rmSync(temp, { force: true });
      continue;
    }
    try {
      for (const name of readdirSync(dir)) {
        if (name.startsWith('cli.cjs.') && name.endsWith(`.${cacheKey}.cache`) && name !== cacheName)
          rmSync(join(dir, name), { force: true });
      }
    } catch {
      // the old ones stay
    }
    return target;
  }
  return undefined;
}

// No cache for this V8, or one it rejected: this process makes one as it exits.
if (!codeCacheUsed && !disabled) {
  process.once('exit', () => {
    try {
      writeCodeCache();
    } catch {
      // a quiet optimisation: never the reason a command fails
    }
  });
}

const bundle = { exports: {} };
script.runInThisContext()(bundle.exports, createRequire(file), bundle, file, dirname(file));

export const { main, processIO, ProcessGuard } = bundle.exports;
