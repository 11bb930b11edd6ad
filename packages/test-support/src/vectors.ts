// The test vectors: upstream data and known answers kept in the repository under test/vectors
// (test/vectors/README.md says where each file came from and under which licence). Tests read
// them only from there, so a clone runs its tests with nothing beside it.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..', '..');

export function vectorsDir(): string {
  return join(repoRoot, 'test', 'vectors');
}

export function vectorPath(...parts: string[]): string {
  return join(vectorsDir(), ...parts);
}

export function readVector(...parts: string[]): string {
  return readFileSync(vectorPath(...parts), 'utf8');
}

export function readVectorJson<T = unknown>(...parts: string[]): T {
  return JSON.parse(readVector(...parts)) as T;
}
