// The repository stands alone: a clone runs its tests with nothing beside it. Two checks:
// - no file names a path outside the checkout, or a section (§) of a document the repository
//   does not contain (every rule is explained where it is used, or in docs/);
// - the unit project passes in a copy of the working tree placed where nothing is beside it (no
//   `shared/` or any other sibling folder), so no test reads outside the checkout.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

/** Tracked and new (not ignored) files, as a clone plus the change at hand would have them. */
function repositoryFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: repoRoot, encoding: 'utf8' });
  return out.split('\0').filter((f) => f !== '');
}

// A citation of a document that is not in the repository, or a path beside the checkout.
const OUTSIDE = [
  /§/,
  /\bproduct\.md\b/,
  /(?<!docs\/)\bsecurity\.md\b/,
  /\bshared\/(?:spec|vectors)\b/,
  /\.\.\/shared\b/,
  /\bCHORIA_VECTORS_DIR\b/,
];
// this file names the patterns it looks for
const SELF = 'test/packaging/standalone.test.ts';

interface Finished {
  status: number | null;
  output: string;
}

/**
 * Runs a command without blocking this test worker: a synchronous child of a minute or more holds
 * the worker's event loop, and vitest's own calls from the worker to the main process then time
 * out ("Timeout calling onTaskUpdate"), an unhandled error that fails the whole run.
 */
function runAsync(command: string, args: string[], cwd: string, timeoutMs: number): Promise<Finished> {
  const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        resolve({
          status: err === null ? 0 : typeof err.code === 'number' ? err.code : null,
          output: `${stdout}\n${stderr}`,
        });
      },
    );
  });
}

describe('the repository stands alone', () => {
  it('names no path outside the checkout and no section of a document it does not contain', () => {
    const found: string[] = [];
    for (const file of repositoryFiles()) {
      if (file === SELF || /\.(png|jpe?g|gif|ico|pdf|bz2|gz)$/.test(file)) continue;
      let text: string;
      try {
        text = readFileSync(join(repoRoot, file), 'utf8');
      } catch {
        continue; // deleted in the working tree
      }
      text.split('\n').forEach((line, i) => {
        if (OUTSIDE.some((re) => re.test(line))) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`);
      });
    }
    expect(found).toEqual([]);
  });

  it('passes its unit tests in a copy of the working tree with nothing beside it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-standalone-'));
    const copy = join(dir, 'repo');
    try {
      // everything but the dependencies and git's own files; the dependencies are linked, not copied
      execFileSync('sh', [
        '-c',
        `mkdir -p "${copy}" && tar -C "${repoRoot}" --exclude=./node_modules --exclude=./.git -cf - . | tar -C "${copy}" -xf -`,
      ]);
      symlinkSync(join(repoRoot, 'node_modules'), join(copy, 'node_modules'));
      // every unit test file but this one, named (this file would copy and run again, for ever)
      const unitFiles = repositoryFiles().filter(
        (f) =>
          f.endsWith('.test.ts') &&
          !f.endsWith('.network.test.ts') &&
          f !== SELF &&
          !f.startsWith('test/interop/') &&
          !f.startsWith('test/soak/'),
      );
      const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
      const { status, output } = await runAsync(
        process.execPath,
        [vitest, 'run', '--project', 'unit', ...unitFiles],
        copy,
        540_000,
      );
      expect(status, output.slice(-4000)).toBe(0);
      expect(output).toMatch(/Tests\s+\d+ passed/);
      expect(output).toMatch(new RegExp(`Test Files\\s+${unitFiles.length} passed`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
