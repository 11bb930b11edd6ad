import { describe, expect, it } from 'vitest';
import { SILENT_TIMEOUTS, SilentPathDetector } from '../../src/choria/silent-path.js';

describe('SilentPathDetector', () => {
  it('takes the path for dead after SILENT_TIMEOUTS timeouts in a row with nothing received, then counts again', () => {
    const d = new SilentPathDetector();
    for (let i = 1; i < SILENT_TIMEOUTS; i++) expect(d.timedOut(0)).toBe(false);
    expect(d.timedOut(0)).toBe(true);
    expect(d.timedOut(0)).toBe(false);
  });

  it('a timeout while something came in, or anything heard, starts the count again', () => {
    const d = new SilentPathDetector(3);
    d.timedOut(0);
    d.timedOut(0);
    expect(d.timedOut(5)).toBe(false);
    d.timedOut(0);
    d.timedOut(0);
    d.heard();
    expect(d.timedOut(0)).toBe(false);
    expect(d.timedOut(0)).toBe(false);
    expect(d.timedOut(0)).toBe(true);
  });
});
