// The layering check (scripts/check-layers.mjs, run by `npm test` before vitest) passes on this
// tree and fails on the mistakes it exists for: an import cycle, an upward import inside the
// core, the CLI reaching past the core's public API, the simulator importing the core, and
// shipped code importing the test support.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const SCRIPT = join(repoRoot, 'scripts', 'check-layers.mjs');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function check(root?: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...(root === undefined ? [] : ['--root', root])], {
    encoding: 'utf8',
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

function scratch(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'cpts-layers-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('scripts/check-layers.mjs', () => {
  it('passes on this checkout', () => {
    const r = check();
    expect(r.output).toContain('no cycles, no upward imports');
    expect(r.status).toBe(0);
  });

  it('fails on an import cycle', () => {
    const root = scratch({
      'packages/core/src/host/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'packages/core/src/host/b.ts': "import type { a } from './a.js';\nexport const b = 1 as unknown as typeof a;\n",
    });
    const r = check(root);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(
      /import cycle: packages\/core\/src\/host\/a\.ts -> packages\/core\/src\/host\/b\.ts -> packages\/core\/src\/host\/a\.ts/,
    );
  });

  it('fails on an upward import inside the core, and on the CLI and simulator crossing their lines', () => {
    const root = scratch({
      'packages/core/src/util/low.ts': "import type { HostJob } from '../host/types.js';\nexport type J = HostJob;\n",
      'packages/core/src/host/types.ts': 'export interface HostJob { identity: string }\n',
      'packages/cli/src/cli.ts':
        "import { Host } from '@choria-provisioner/core/host';\nimport { x } from '../../core/src/util/low.js';\nexport { Host, x };\n",
      'packages/simulator/src/fleet.ts': "import { VERSION } from '@choria-provisioner/core';\nexport { VERSION };\n",
      'packages/core/src/provisioner/p.ts':
        "import { sleep } from '@choria-provisioner/test-support/wait';\nexport { sleep };\n",
      'packages/test-support/src/wait.ts':
        "import { VERSION } from '@choria-provisioner/core/internal';\nexport const sleep = VERSION;\n",
    });
    const r = check(root);
    expect(r.status).toBe(1);
    expect(r.output).toContain(
      'packages/core/src/util/low.ts (util) imports ../host/types.js from the layer above (host)',
    );
    expect(r.output).toContain(
      "packages/cli/src/cli.ts: the CLI uses the core's public API only, not @choria-provisioner/core/host",
    );
    expect(r.output).toContain(
      "packages/cli/src/cli.ts: ../../core/src/util/low.js reaches into another package's files",
    );
    expect(r.output).toContain(
      'packages/simulator/src/fleet.ts: the simulator is written independently of the core and must not import it',
    );
    expect(r.output).toContain(
      'packages/core/src/provisioner/p.ts: @choria-provisioner/test-support/wait is test support; a shipped package must not import it',
    );
    // test support may use the internals
    expect(r.output).not.toContain('packages/test-support/src/wait.ts');
  });
});
