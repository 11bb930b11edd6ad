import { describe, expect, it } from 'vitest';
import { DurationError, formatDuration, parseDuration } from '../../src/util/duration.js';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

interface DurationCase {
  input: string;
  ok: boolean;
  ms?: number;
  go_string?: string;
  go_error?: string;
  note?: string;
}

const { cases } = readVectorJson<{ cases: DurationCase[] }>('crypto', 'durations.json');

// Upstream returns wrapped-around or zero values for these; they are rejected here with a clear error.
const GARBAGE_UPSTREAM = new Set(['infd', 'Infd', 'nand', '293y', '3.4e38d']);

function errorOf(input: string): DurationError {
  try {
    parseDuration(input);
  } catch (err) {
    if (err instanceof DurationError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(input)} to fail`);
}

describe('parseDuration against durations.json', () => {
  it('has the expected number of vectors', () => {
    expect(cases.length).toBe(81);
  });

  for (const c of cases.filter((x) => x.ok && !GARBAGE_UPSTREAM.has(x.input))) {
    it(`${JSON.stringify(c.input)} -> ${c.ms} ms`, () => {
      expect(parseDuration(c.input)).toBe(c.ms);
      expect(formatDuration(parseDuration(c.input))).toBe(c.go_string);
    });
  }

  for (const c of cases.filter((x) => !x.ok)) {
    it(`${JSON.stringify(c.input)} fails with the Go error text`, () => {
      const err = errorOf(c.input);
      expect(err.message).toBe(c.go_error);
      expect(err.input).toBe(c.input);
    });
  }

  for (const input of GARBAGE_UPSTREAM) {
    it(`${JSON.stringify(input)} is rejected instead of producing garbage`, () => {
      expect(cases.some((c) => c.input === input)).toBe(true);
      expect(errorOf(input).message).toMatch(/not a finite number|out of range/);
    });
  }
});

describe('parseDuration range limits', () => {
  it('accepts 292 years and rejects 293 with a clear reason', () => {
    expect(parseDuration('292y')).toBe(292 * 365 * 24 * 3_600_000);
    expect(errorOf('293y').message).toBe('duration "293y" is out of range (more than 292 years)');
    expect(errorOf('-293y').message).toContain('out of range');
  });

  it('rejects inf and nan in every spelling', () => {
    for (const s of ['infd', '-infw', '+Infinityy', 'NaNd'])
      expect(errorOf(s).message).toContain('not a finite number');
    // Go itself refuses a signed nan
    expect(errorOf('+nand').message).toBe('strconv.ParseFloat: parsing "+nan": invalid syntax');
  });

  it('reports Go overflow for huge Go durations', () => {
    expect(errorOf('9999999999999h').message).toBe('time: invalid duration "9999999999999h"');
    expect(errorOf('2562048h').message).toBe('time: invalid duration "2562048h"');
    expect(parseDuration('2562047h')).toBe(2562047 * 3_600_000);
  });

  it('follows Go grammar details', () => {
    expect(errorOf('.s').message).toBe('time: invalid duration ".s"');
    expect(errorOf('1.5').message).toBe('invalid time unit 5');
    expect(errorOf('-').message).toBe('invalid time unit -');
    expect(errorOf('1h5').message).toBe('invalid time unit 5');
    expect(errorOf('10\u00b5m').message).toBe('time: unknown unit "\\xc2\\xb5m" in duration "10\\xc2\\xb5m"');
    expect(errorOf('1__0d').message).toBe('strconv.ParseFloat: parsing "1__0": invalid syntax');
    expect(errorOf('_10d').message).toBe('strconv.ParseFloat: parsing "_10": invalid syntax');
    expect(parseDuration('1.h')).toBe(3_600_000);
    expect(parseDuration('0s')).toBe(0);
  });

  it('never returns negative zero', () => {
    expect(Object.is(parseDuration('-0.01d'), 0)).toBe(true);
    expect(Object.is(parseDuration('-0s'), 0)).toBe(true);
  });
});

describe('formatDuration', () => {
  it('prints Go style', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(60_000)).toBe('1m0s');
    expect(formatDuration(7_200_000)).toBe('2h0m0s');
    expect(formatDuration(1_500)).toBe('1.5s');
    expect(formatDuration(10)).toBe('10ms');
    expect(formatDuration(0.1)).toBe('100\u00b5s');
    expect(formatDuration(0.00001)).toBe('10ns');
    expect(formatDuration(-90_000)).toBe('-1m30s');
    expect(formatDuration(5_400_000)).toBe('1h30m0s');
  });
});
