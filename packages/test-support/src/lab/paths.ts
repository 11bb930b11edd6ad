// Where the real-Choria interop lab finds its prebuilt binaries and keeps its run state. The
// binaries are never part of this repository (docs/interop.md says which ones and where); without
// them every interop test file skips with one line.
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface LabPaths {
  /** $CHORIA_LAB_DIR, default ~/.cache/choria-provisioner-ts/lab */
  readonly dir: string;
  readonly binDir: string;
  /** go-choria (server, broker and the `choria jwt` tools) */
  readonly choria: string;
  /** the upstream Go provisioner */
  readonly upstreamProvisioner: string;
  /** per-run directories are made under here */
  readonly runDir: string;
  /** a go-choria binary reporting version UPGRADE_VERSION, for the upgrades row */
  readonly upgradeChoria: string;
  /** kept between runs (the upgrade repository's compressed binary) */
  readonly cacheDir: string;
}

/** The version the upgrades row moves servers to. */
export const UPGRADE_VERSION = '0.30.3';

export function labPaths(env: NodeJS.ProcessEnv = process.env): LabPaths {
  const dir = env['CHORIA_LAB_DIR'] ?? join(homedir(), '.cache', 'choria-provisioner-ts', 'lab');
  const binDir = join(dir, 'bin');
  return {
    dir,
    binDir,
    choria: join(binDir, 'choria'),
    upstreamProvisioner: join(binDir, 'choria-provisioner'),
    runDir: join(dir, 'run'),
    upgradeChoria: join(binDir, `choria-${UPGRADE_VERSION}`),
    cacheDir: join(dir, 'cache'),
  };
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface LabAvailability {
  readonly available: boolean;
  readonly paths: LabPaths;
  /** the one line a skipped interop file prints */
  readonly skipLine: string;
}

export function labAvailability(paths: LabPaths = labPaths()): LabAvailability {
  const available = executable(paths.choria) && executable(paths.upstreamProvisioner);
  return {
    available,
    paths,
    skipLine: `interop: go-choria lab binaries not found in ${paths.binDir} (choria, choria-provisioner): skipped`,
  };
}

/**
 * The provisioning JWT path compiled into the choria binary (build.ProvisionJWTFile). Every
 * provisioning-mode server of the lab reads this one file, so only one lab runs at a time and
 * each row writes the JWT it needs there. Read from `choria buildinfo` rather than assumed, so a
 * binary built for another CHORIA_LAB_DIR is caught with a clear error.
 */
export function compiledJwtFile(paths: LabPaths): string {
  const out = execFileSync(paths.choria, ['buildinfo'], { encoding: 'utf8', timeout: 20_000 });
  const m = /Provisioning JWT file:\s*(\S+)/.exec(out);
  if (m?.[1] === undefined) {
    throw new Error(
      `${paths.choria} has no provisioning JWT file compiled in (build.ProvisionJWTFile): ` +
        `provisioning mode cannot be entered; see docs/interop.md`,
    );
  }
  return m[1];
}
