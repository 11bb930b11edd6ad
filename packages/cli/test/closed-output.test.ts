// The CLI as a process whose reader goes away before it has printed (`validate ... | head -1`):
// the rest of its output is dropped and it ends with its own status, no error, no stack trace.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeCliConfig } from '@choria-provisioner/test-support/settings';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const bin = join(repoRoot, 'packages', 'cli', 'dist', 'bin.js');

/** Runs the CLI with its stdout closed at once; its exit status and what it wrote on stderr. */
function runWithClosedStdout(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  // the reader is gone before the CLI writes its first line
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('the CLI with its output closed', () => {
  let dir: string;
  let config: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cpts-closed-output-'));
    config = writeCliConfig(dir, 'closed');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('validate of a good configuration still exits 0, quietly', async () => {
    const { code, stderr } = await runWithClosedStdout(['validate', '--config', config]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('validate of a bad configuration still exits 1 (configuration problems)', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'site: closed\nworkers: many\n');
    const { code, stderr } = await runWithClosedStdout(['validate', '--config', bad]);
    expect(stderr).not.toContain('unexpected error');
    expect(code).toBe(1);
  });
});
