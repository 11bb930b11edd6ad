// Keeps docs/configuration.md and the schema (the single source of truth) in step.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHORIA_KEYS_READ } from '../../src/config/choria-config.js';
import { describeProvisionerKeys } from '../../src/config/schema.js';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const docs = readFileSync(join(repoRoot, 'docs', 'configuration.md'), 'utf8');

interface Row {
  key: string;
  cells: string[];
  line: string;
}

/** Table rows between every `<!-- name:begin -->` / `<!-- name:end -->` pair. */
function tableRows(name: string, columns: number): Row[] {
  const rows: Row[] = [];
  const pattern = new RegExp(`<!-- ${name}:begin -->([\\s\\S]*?)<!-- ${name}:end -->`, 'g');
  const sections = [...docs.matchAll(pattern)];
  expect(sections.length, `no ${name} section in docs/configuration.md`).toBeGreaterThan(0);
  for (const section of sections) {
    for (const line of (section[1] ?? '').split('\n').map((l) => l.trim())) {
      if (!line.startsWith('|')) continue;
      const cells = line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim());
      if (cells[0] === 'Key' || /^-+$/.test(cells[0] ?? '')) continue;
      expect(cells, `row must have ${columns} cells (no "|" inside cells): ${line}`).toHaveLength(columns);
      const key = /^`([^`]+)`$/.exec(cells[0] ?? '')?.[1];
      expect(key, `first cell must be a key in backticks: ${line}`).toBeDefined();
      rows.push({ key: key ?? '', cells, line });
    }
  }
  return rows;
}

describe('docs/configuration.md documents the provisioner schema', () => {
  const schemaKeys = describeProvisionerKeys();
  const rows = tableRows('provisioner-keys', 5);
  const documented = rows.map((r) => r.key);

  it('documents every schema key, nested features.* included', () => {
    const missing = schemaKeys.map((k) => k.key).filter((k) => !documented.includes(k));
    expect(missing).toEqual([]);
    expect(documented).toContain('features.pki');
    expect(documented).toContain('features.ed25519');
  });

  it('documents no key that is not in the schema, and each only once', () => {
    const known = new Set(schemaKeys.map((k) => k.key));
    expect(documented.filter((k) => !known.has(k))).toEqual([]);
    expect(new Set(documented).size).toBe(documented.length);
  });

  it('shows the schema type, default and description of each key', () => {
    for (const doc of schemaKeys) {
      const row = rows.find((r) => r.key === doc.key);
      expect(row?.cells.slice(1, 4), doc.key).toEqual([doc.type, doc.default, doc.description]);
    }
  });

  it('marks our extensions', () => {
    for (const doc of schemaKeys.filter((k) => k.extension)) {
      expect(rows.find((r) => r.key === doc.key)?.cells[4], doc.key).toContain('*(extension)*');
    }
  });
});

describe('docs/configuration.md documents the Choria client keys read', () => {
  const documented = tableRows('choria-keys', 3).map((r) => r.key);

  it('lists exactly the keys the parser reads', () => {
    expect([...documented].sort()).toEqual([...CHORIA_KEYS_READ].sort());
  });
});
