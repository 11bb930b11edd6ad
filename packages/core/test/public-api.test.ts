// The package root names its API one by one (no `export *`), and docs/embedding.md lists exactly
// those names: adding or removing a public name means documenting it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const indexSource = readFileSync(join(repoRoot, 'packages', 'core', 'src', 'index.ts'), 'utf8');

function exportedNames(source: string): string[] {
  const names: string[] = [];
  for (const m of source.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of (m[1] ?? '').split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop()
        ?.trim();
      if (name !== undefined && name !== '') names.push(name);
    }
  }
  return names;
}

function documentedNames(): string[] {
  const doc = readFileSync(join(repoRoot, 'docs', 'embedding.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## The public API'), doc.indexOf('## Running the example'));
  return [...section.matchAll(/^\|[^|]+\|(.+)\|$/gm)].flatMap((row) =>
    [...(row[1] ?? '').matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((m) => m[1] ?? ''),
  );
}

describe('the public API of @choria-provisioner/core', () => {
  it('is a list of names, not re-exported modules', () => {
    expect(indexSource).not.toMatch(/export\s+\*/);
    const names = exportedNames(indexSource);
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeGreaterThan(40);
    expect(names.length).toBeLessThan(130);
  });

  it('is documented name by name in docs/embedding.md', () => {
    expect(documentedNames().sort()).toEqual(exportedNames(indexSource).sort());
  });

  it('exports at run time every value it names (types aside)', () => {
    const runtime = Object.keys(api).sort();
    const named = new Set(exportedNames(indexSource));
    for (const name of runtime) expect(named.has(name), name).toBe(true);
    for (const name of [
      'Provisioner',
      'Host',
      'loadSite',
      'createHelperRunner',
      'ChoriaClient',
      'startMonitorServer',
      'VERSION',
    ])
      expect(runtime).toContain(name);
    // internals stay internal
    for (const name of [
      'envelopeCodec',
      'LeaderElection',
      'splitCommand',
      'LifecycleWitness',
      'ksuid',
      'Registry',
      'OUTCOME_RULES',
    ]) {
      expect(runtime).not.toContain(name);
    }
    // the test hooks of a host runner are not part of its public settings
    expect(exportedNames(indexSource)).not.toContain('HostDeps');
  });
});
