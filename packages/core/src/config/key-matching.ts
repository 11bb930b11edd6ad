import type { PropertySchema } from './schema.js';
import { isPlainObject } from '../util/values.js';

export { isPlainObject };

export interface KeyMatchResult {
  /** the input with every known key renamed to its schema spelling, unknown keys left out */
  readonly value: Record<string, unknown>;
  /** warnings without the file prefix */
  readonly warnings: readonly string[];
}

/**
 * Renames keys to their schema spelling, matching case-insensitively like upstream (Go's JSON
 * decoding prefers an exact match, then any case). Nested objects that have `properties` in the
 * schema are matched the same way. Unknown keys are dropped with a warning that suggests the
 * nearest known key.
 */
export function matchKeys(
  input: Readonly<Record<string, unknown>>,
  properties: Readonly<Record<string, PropertySchema>>,
  prefix = '',
): KeyMatchResult {
  const warnings: string[] = [];
  const value: Record<string, unknown> = {};
  const spelledAs = new Map<string, string>();
  const known = Object.keys(properties);

  for (const [given, raw] of Object.entries(input)) {
    const canonical = known.includes(given) ? given : known.find((k) => k.toLowerCase() === given.toLowerCase());
    if (canonical === undefined) {
      const suggestion = nearestKey(given, known);
      const hint = suggestion === undefined ? '' : ` (did you mean "${prefix}${suggestion}"?)`;
      warnings.push(`unknown key "${prefix}${given}" ignored${hint}`);
      continue;
    }

    const earlier = spelledAs.get(canonical);
    if (earlier !== undefined) {
      warnings.push(`${prefix}${canonical} is given twice (as "${earlier}" and "${given}"); the later one is used`);
    }
    spelledAs.set(canonical, given);

    const nested = properties[canonical]?.properties;
    if (nested !== undefined && isPlainObject(raw)) {
      const inner = matchKeys(raw, nested, `${prefix}${canonical}.`);
      warnings.push(...inner.warnings);
      value[canonical] = inner.value;
    } else {
      value[canonical] = raw;
    }
  }
  return { value, warnings };
}

/** The known key closest to a misspelt one, when it is close enough to be a likely typo. */
export function nearestKey(given: string, known: readonly string[]): string | undefined {
  const needle = given.toLowerCase().replaceAll('-', '_');
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(needle, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const allowed = needle.length <= 4 ? 1 : needle.length <= 10 ? 2 : 3;
  return bestDistance <= allowed ? best : undefined;
}

/**
 * Edit distance counting a swap of two neighbouring letters as one edit (optimal string
 * alignment). Hand-written (a dozen lines) rather than adding a dependency for the "did you
 * mean" hint on configuration keys.
 */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const above = rows[i - 1] ?? [];
      let best = Math.min((above[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (above[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (rows[i - 2]?.[j - 2] ?? 0) + 1);
      }
      row.push(best);
    }
    rows.push(row);
  }
  return rows[a.length]?.[b.length] ?? 0;
}
