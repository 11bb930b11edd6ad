import { describe, expect, it } from 'vitest';
import { ksuid, ksuidBytes, ksuidTimestamp, newRequestId } from '../../src/util/ids.js';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

interface KsuidVectors {
  epoch_unix: number;
  examples: { string: string; raw_hex: string; unix: string }[];
}

const vectors = readVectorJson<KsuidVectors>('tokens', 'ksuid.json');

describe('newRequestId', () => {
  it('is a dashless UUID v4 in lowercase hex', () => {
    const id = newRequestId();
    expect(id).toMatch(/^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
    expect(newRequestId()).not.toBe(id);
  });
});

describe('ksuid', () => {
  it.each(vectors.examples)('encodes $string from its raw bytes', (example) => {
    const raw = Buffer.from(example.raw_hex, 'hex');
    const unix = Number(example.unix);
    expect(raw.readUInt32BE(0) + vectors.epoch_unix).toBe(unix);
    expect(ksuid(unix, raw.subarray(4))).toBe(example.string);
    expect(ksuidTimestamp(example.string)).toBe(unix);
    expect(ksuidBytes(example.string).toString('hex')).toBe(example.raw_hex);
  });

  it('uses whole seconds and random payload by default', () => {
    const a = ksuid(1_700_000_000.9);
    const b = ksuid(1_700_000_000.1);
    expect(a).toHaveLength(27);
    expect(a).not.toBe(b);
    expect(ksuidTimestamp(a)).toBe(1_700_000_000);
  });

  it('pads small values to 27 characters', () => {
    expect(ksuid(1_400_000_000, new Uint8Array(16))).toBe('0'.repeat(27));
    expect(ksuidTimestamp('0'.repeat(27))).toBe(1_400_000_000);
  });

  it('rejects times outside the KSUID range and bad payloads', () => {
    expect(() => ksuid(1_399_999_999)).toThrow(/outside the KSUID range/);
    expect(() => ksuid(1_400_000_000 + 2 ** 32)).toThrow(/outside the KSUID range/);
    expect(() => ksuid(1_700_000_000, new Uint8Array(15))).toThrow(/16 bytes/);
  });

  it('rejects malformed KSUID strings', () => {
    expect(() => ksuidTimestamp('short')).toThrow(/27 characters/);
    expect(() => ksuidTimestamp('2YBXZMtwY2Uu4nem5zj9tAJDks-')).toThrow(/base62/);
    expect(() => ksuidTimestamp('z'.repeat(27))).toThrow(/160 bits/);
  });
});
