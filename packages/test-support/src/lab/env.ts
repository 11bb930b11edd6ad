// The lab's settings from the environment (LAB_KINDS, LAB_VARIANTS, LAB_SERVERS, ...), read and
// checked in one way: a value that names nothing the lab knows is an error that says what it takes.

/** The members of `known` named in the comma-separated variable `name` (default: `fallback`), in `known`'s order. */
export function listSetting<T extends string>(name: string, known: readonly T[], fallback: readonly T[] = known): T[] {
  const given = process.env[name];
  const wanted = (given ?? fallback.join(',')).split(',').map((v) => v.trim());
  const chosen = known.filter((k) => wanted.includes(k));
  if (chosen.length === 0)
    throw new Error(`${name}=${given ?? ''}: expected ${known.join(', ')} or several of them (comma-separated)`);
  return chosen;
}

/** The whole number in the variable `name` (default: `fallback`), from 1 to `max`. */
export function wholeNumberSetting(name: string, fallback: number, max: number): number {
  const text = process.env[name] ?? String(fallback);
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new Error(`${name}=${text}: expected a whole number from 1 to ${max}`);
  return n;
}
