// An upgrade repository in go-updater's layout, <root>/<version>/linux/amd64/release.json beside
// choria.bz2 ({"binary": "choria.bz2", "hash": <sha256 of the uncompressed binary>}), for the
// upgrades row; the lab serves it over loopback HTTP. Compressing a 100 MB binary takes a while on
// two busy cores, so the .bz2 is kept in <labDir>/cache and made again only when the binary changes.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function sha256(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

export interface UpgradeRepoOptions {
  /** the repository's root directory (served over HTTP) */
  readonly root: string;
  readonly version: string;
  /** the go-choria binary that reports `version` */
  readonly binary: string;
  /** where compressed binaries are kept between runs */
  readonly cacheDir: string;
}

export async function writeUpgradeRepository(o: UpgradeRepoOptions): Promise<void> {
  if (!existsSync(o.binary))
    throw new Error(
      `the upgrades row needs ${o.binary}, a go-choria binary that reports version ${o.version} (docs/interop.md)`,
    );
  mkdirSync(o.cacheDir, { recursive: true });
  const st = statSync(o.binary);
  const cached = join(o.cacheDir, `choria-${o.version}-${st.size}-${Math.trunc(st.mtimeMs)}.bz2`);
  if (!existsSync(cached)) {
    const tmp = join(o.cacheDir, `choria-${o.version}.tmp`);
    copyFileSync(o.binary, tmp);
    await run('bzip2', ['-f', '-1', tmp], { timeout: 300_000 });
    copyFileSync(`${tmp}.bz2`, cached);
  }
  const dir = join(o.root, o.version, 'linux', 'amd64');
  mkdirSync(dir, { recursive: true });
  copyFileSync(cached, join(dir, 'choria.bz2'));
  writeFileSync(join(dir, 'release.json'), JSON.stringify({ binary: 'choria.bz2', hash: await sha256(o.binary) }));
}
