// Small helpers for building error messages from unknown thrown values.

/** The message of an Error, or the value rendered as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
