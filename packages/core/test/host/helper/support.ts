// Shared fixtures for the helper tests: temp scripts, a sample request, waiting for processes.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from '@choria-provisioner/test-support/processes';
import { until } from '@choria-provisioner/test-support/wait';
import type { HelperRequest } from '../../../src/host/helper/types.js';

export const TOKEN = 'tok-s3cr3t-9fe1c0b1a6d84f2e';
export const PASSWORD = 'broker-pa55word';

export function sampleRequest(identity = 'web1.example.net', facts: Record<string, unknown> = {}): HelperRequest {
  return {
    identity,
    csr: null,
    ed25519_pubkey: null,
    inventory: JSON.stringify({
      agents: ['rpcutil'],
      facts,
      main_collective: 'provisioning',
      version: '0.29.4',
      upgradable: true,
    }),
    jwt: {
      cht: TOKEN,
      chs: false,
      chpd: true,
      chpwd: PASSWORD,
      extensions: null,
      ou: 'choria',
      purpose: 'choria_provisioning',
    },
  };
}

/** A temp directory holding executable scripts; `remove()` deletes it. */
export class ScriptDir {
  readonly path = mkdtempSync(join(tmpdir(), 'helper-test-'));

  /** Writes an executable script and returns its path. */
  script(name: string, body: string): string {
    const file = join(this.path, name);
    writeFileSync(file, body);
    chmodSync(file, 0o755);
    return file;
  }

  file(name: string): string {
    return join(this.path, name);
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}

/** Single-quotes a path for a helper command line. */
export function q(path: string): string {
  return `'${path.replace(/'/g, `'\\''`)}'`;
}

/**
 * Reads a pid a script wrote to a file (waiting for it to appear). The wait covers starting the
 * helper spawner (a Node process) and the script: well under a second alone, but CI runs a second
 * copy of the unit tests beside the whole suite on two cores, where 2 s was once not enough.
 */
export async function readPid(file: string): Promise<number> {
  let text = '';
  await until(
    `a pid in ${file}`,
    () => {
      try {
        text = readFileSync(file, 'utf8').trim();
      } catch {
        text = '';
      }
      return text !== '';
    },
    10_000,
  );
  return Number(text);
}

/** Resolves once `pid` is gone (a SIGKILLed process may take a moment to finish exiting under load); throws after `ms`. */
export async function becomesDead(pid: number, ms = 1500): Promise<void> {
  await until(`process ${pid} to exit`, () => !isAlive(pid), ms);
}
