// Installs the packages the way a user gets them after publishing: the release directory of
// scripts/pack-release.mjs (the `npm pack` tarballs, a package.json and a lockfile cut from the
// repository's), installed with `npm ci --offline`, so no registry is needed: every third-party
// package comes from the npm cache that the repository's own `npm ci` filled.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export type PackedInstall =
  | { readonly ok: true; readonly appDir: string; readonly tarballs: readonly string[] }
  | { readonly ok: false; readonly reason: string };

/** Writes a release into `dir` (the packages built beforehand) and installs it there. */
export async function installPacked(repoRoot: string, dir: string): Promise<PackedInstall> {
  await run(process.execPath, [join(repoRoot, 'scripts', 'pack-release.mjs'), '--out', dir], {
    cwd: repoRoot,
    maxBuffer: 16 * 1024 * 1024,
  });
  try {
    await run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel', 'error'], {
      cwd: dir,
      timeout: 240_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    const text = `${(err as { stderr?: string }).stderr ?? ''}${(err as Error).message}`;
    if (/ENOTCACHED|only-if-cached/.test(text)) {
      return {
        ok: false,
        reason:
          `the npm cache lacks packages the tarballs need (run "npm ci" in the repository first): ` +
          `${text.split('\n').find((l) => /request to/.test(l)) ?? text.slice(0, 200)}`,
      };
    }
    throw new Error(`npm ci of the packed packages failed: ${text.slice(0, 2000)}`, { cause: err });
  }
  const tarballs = readdirSync(dir)
    .filter((f) => f.endsWith('.tgz'))
    .sort();
  return { ok: true, appDir: dir, tarballs };
}
