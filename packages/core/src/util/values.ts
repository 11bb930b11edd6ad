// Small checks and texts used at every edge of the library: one definition each.

/** A JSON-style object: not null, not an array (what JSON.parse makes of `{...}`). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The message of an error, or the text of anything else thrown, for log lines and error texts. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
