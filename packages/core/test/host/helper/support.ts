// Shared fixtures for the helper tests: temp scripts, a sample request, process liveness.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HelperRequest } from '../../../src/host/helper/types.js';

export const TOKEN = 'tok-s3cr3t-9fe1c0b1a6d84f2e';
export const PASSWORD = 'broker-pa55word';

export function sampleRequest(identity = 'web1.example.net', facts: Record<string, unknown> = {}): HelperRequest {
  return {
    identity,
    csr: null,
    ed25519_pubkey: null,
    inventory: JSON.stringify({ agents: ['rpcutil'], facts, main_collective: 'provisioning', version: '0.29.4', upgradable: true }),
    jwt: { cht: TOKEN, chs: false, chpd: true, chpwd: PASSWORD, extensions: null, ou: 'choria', purpose: 'choria_provisioning' },
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

/** True while `pid` is a live (non-zombie) process. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls until `check` holds or `ms` pass; returns the last result. */
export async function eventually(check: () => boolean, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

/** Reads a pid a script wrote to a file (waiting for it to appear). */
export async function readPid(file: string): Promise<number> {
  let text = '';
  await eventually(() => {
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch {
      text = '';
    }
    return text !== '';
  });
  return Number(text);
}

/** True once `pid` is gone; a SIGKILLed process may take a moment to finish exiting under load. */
export function becomesDead(pid: number, ms = 1500): Promise<boolean> {
  return eventually(() => !isAlive(pid), ms);
}
