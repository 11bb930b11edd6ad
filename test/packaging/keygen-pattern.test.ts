// No shipped code exports a key it just generated through a KeyObject: on Node 20.20 that can
// deadlock the process during a garbage collection (packages/simulator/src/crypto/keys.ts). Key
// generation asks for its output already encoded, and generated WebCrypto keys never become
// KeyObjects. packages/simulator/test/keygen.test.ts runs the simulator's key paths at volume.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

const shipped = [
  ...['core', 'simulator', 'cli'].flatMap((p) => sources(join(repoRoot, 'packages', p, 'src'))),
  ...sources(join(repoRoot, 'examples', 'helpers')),
];

/** The argument text of each call of a key generator in `text`, also through promisify(...)(...). */
function generatorCalls(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\bgenerateKeyPair(?:Sync)?\)?\(/g)) {
    let depth = 1;
    let i = (m.index ?? 0) + m[0].length;
    const start = i;
    while (i < text.length && depth > 0) {
      if (text[i] === '(') depth++;
      else if (text[i] === ')') depth--;
      i++;
    }
    out.push(text.slice(start, i - 1));
  }
  return out;
}

describe('generated keys', () => {
  it('are generated with their encoding, never exported afterwards', () => {
    const found: string[] = [];
    const unencoded: string[] = [];
    for (const file of shipped) {
      const text = readFileSync(file, 'utf8');
      for (const args of generatorCalls(text)) {
        found.push(file);
        if (!args.includes('publicKeyEncoding')) unencoded.push(`${relative(repoRoot, file)}: (${args.slice(0, 60)})`);
      }
    }
    // the scan saw the generators (the simulator's node keys, the demo's RSA signer)
    expect(found.length).toBeGreaterThanOrEqual(3);
    expect(unencoded).toEqual([]);
  });

  it('never turn WebCrypto keys into KeyObjects', () => {
    const from = shipped
      .filter((f) => /KeyObject\.from\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(repoRoot, f));
    expect(from).toEqual([]);
  });
});
