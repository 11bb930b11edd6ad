// dist/bundle/cli.js, put there by scripts/bundle.mjs: runs the CLI's bundle (cli.cjs) with the
// V8 code cache the build made (cli.cjs.cache), so that a starting process loads compiled code
// instead of parsing and compiling ~2.8 MB of JavaScript. Node 20 keeps no compiled code between
// runs itself (module.enableCompileCache came with Node 22), and V8 takes a code cache only for a
// script it compiles, hence the bundle is CommonJS run through vm.Script. A cache that V8 rejects
// (another Node.js version, other V8 flags) or that is missing costs nothing: the bundle is
// compiled as usual.
import { isAscii } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { URL, fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

const file = fileURLToPath(new URL('./cli.cjs', import.meta.url));

function readCache(path) {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
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

const cachedData = readCache(`${file}.cache`);
// CommonJS's own wrapper, on the bundle's first line so that stack traces keep its line numbers
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${readSource(file)}\n})`, {
  filename: file,
  ...(cachedData === undefined ? {} : { cachedData }),
});
const bundle = { exports: {} };
script.runInThisContext()(bundle.exports, createRequire(file), bundle, file, dirname(file));

export const { main, processIO, ProcessGuard } = bundle.exports;

/** Whether V8 took the code cache (false when there was none or it was rejected). */
export const codeCacheUsed = cachedData !== undefined && !script.cachedDataRejected;

/** The code cache of everything compiled so far: the build writes it after a representative run. */
export function createCodeCache() {
  return script.createCachedData();
}
