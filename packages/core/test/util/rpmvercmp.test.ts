import { describe, expect, it } from 'vitest';
import { parseRpmVersion, rpmVersionCompare, rpmVersionEqual } from '../../src/util/rpmvercmp.js';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

interface Parsed {
  epoch: number;
  version: string;
  release: string;
}
interface RpmCase {
  a: string;
  b: string;
  expected: -1 | 0 | 1;
  equal: boolean;
  a_parsed: Parsed;
  b_parsed: Parsed;
}

const cases = readVectorJson<{ cases: RpmCase[] }>('crypto', 'rpmvercmp.json').cases;

describe('rpmVersionCompare', () => {
  it('has the 60 vector cases', () => {
    expect(cases).toHaveLength(60);
  });

  it.each(cases)('compare($a, $b) = $expected', (c) => {
    expect(parseRpmVersion(c.a)).toEqual(c.a_parsed);
    expect(parseRpmVersion(c.b)).toEqual(c.b_parsed);
    expect(rpmVersionCompare(c.a, c.b)).toBe(c.expected);
    expect(rpmVersionCompare(c.b, c.a)).toBe(-c.expected || 0);
    expect(rpmVersionEqual(c.a, c.b)).toBe(c.equal);
  });

  it('treats out-of-range and signed epochs like strconv.Atoi', () => {
    expect(parseRpmVersion('99999999999999999999:1').epoch).toBe(0);
    expect(parseRpmVersion('-1:1').epoch).toBe(-1);
    expect(parseRpmVersion('+2:1').epoch).toBe(2);
    expect(parseRpmVersion('\t 3:1')).toEqual({ epoch: 3, version: '1', release: '' });
    expect(rpmVersionCompare('-1:5', '0:1')).toBe(-1);
  });
});
