// Locates ../shared/vectors (beside the checkout, as in CI) for tests.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..', '..');

export function vectorsDir(): string {
  const candidates = [process.env['CHORIA_VECTORS_DIR'], resolve(repoRoot, '..', 'shared', 'vectors')];
  for (const c of candidates) if (c !== undefined && existsSync(c)) return c;
  throw new Error(`shared test vectors not found (looked in ${candidates.filter(Boolean).join(', ')}); set CHORIA_VECTORS_DIR`);
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
