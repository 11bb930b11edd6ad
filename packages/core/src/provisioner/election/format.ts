// Human-readable durations for election log lines and errors.

/** "750 ms", "1.5 s", "60 s", "1 h" */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (Math.abs(ms) < 1_000) return `${Math.round(ms)} ms`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  return `${Number((ms / 1_000).toFixed(2))} s`;
}
