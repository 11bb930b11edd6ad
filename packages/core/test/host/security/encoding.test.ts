import { describe, expect, it } from 'vitest';
import { goJsonStringify } from '../../../src/util/go-json.js';
import { decodeFirstPemBlock, encodePem } from '../../../src/host/security/pem.js';

describe('decodeFirstPemBlock', () => {
  it('reads type, headers and bytes, skipping text before the block', () => {
    const text =
      'intro\n-----BEGIN X-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: A,B\n\naGVs\nbG8=\n-----END X-----\ntrailer';
    const block = decodeFirstPemBlock(text);
    expect(block?.type).toBe('X');
    expect(Object.fromEntries(block?.headers ?? [])).toEqual({ 'Proc-Type': '4,ENCRYPTED', 'DEK-Info': 'A,B' });
    expect(block?.bytes.toString()).toBe('hello');
  });

  it('handles CRLF line endings and an empty block', () => {
    expect(decodeFirstPemBlock('-----BEGIN A-----\r\naGk=\r\n-----END A-----\r\n')?.bytes.toString()).toBe('hi');
    expect(decodeFirstPemBlock('-----BEGIN A-----\n-----END A-----\n')?.bytes).toHaveLength(0);
  });

  it('skips malformed blocks and finds the next one', () => {
    const mismatched = '-----BEGIN A-----\naGk=\n-----END B-----\n';
    expect(decodeFirstPemBlock(mismatched)).toBeNull();
    expect(decodeFirstPemBlock(`${mismatched}-----BEGIN C-----\nYm9i\n-----END C-----\n`)?.type).toBe('C');
    expect(decodeFirstPemBlock('-----BEGIN A-----\n!!!!\n-----END A-----\n')).toBeNull();
    expect(decodeFirstPemBlock('-----BEGIN A-----\naGk=\n')).toBeNull();
    expect(decodeFirstPemBlock('-----BEGIN A-----\naGk=\n-----END A----- extra\n')).toBeNull();
    expect(decodeFirstPemBlock('no pem')).toBeNull();
  });

  it('accepts a Buffer', () => {
    expect(decodeFirstPemBlock(Buffer.from('-----BEGIN A-----\naGk=\n-----END A-----\n'))?.bytes.toString()).toBe('hi');
  });
});

describe('encodePem', () => {
  it('writes Proc-Type first, other headers sorted, 64-character lines and a final newline', () => {
    const headers = new Map([
      ['Z', '1'],
      ['DEK-Info', 'x'],
      ['Proc-Type', '4,ENCRYPTED'],
    ]);
    const pem = encodePem({ type: 'T', headers, bytes: Buffer.alloc(60, 0xff) });
    const lines = pem.split('\n');
    expect(lines.slice(0, 5)).toEqual(['-----BEGIN T-----', 'Proc-Type: 4,ENCRYPTED', 'DEK-Info: x', 'Z: 1', '']);
    expect(lines[5]).toHaveLength(64);
    expect(lines.slice(-2)).toEqual(['-----END T-----', '']);
    expect(decodeFirstPemBlock(pem)?.bytes.equals(Buffer.alloc(60, 0xff))).toBe(true);
  });

  it('writes no header section without headers', () => {
    expect(encodePem({ type: 'A', bytes: Buffer.from('hi') })).toBe('-----BEGIN A-----\naGk=\n-----END A-----\n');
  });
});

describe('Go JSON encoding', () => {
  it('escapes like encoding/json', () => {
    expect(goJsonStringify('a<b>&c')).toBe('"a\\u003cb\\u003e\\u0026c"');
    expect(goJsonStringify('q"\\\n\r\t\b\f\u0001\u2028\u2029é😀')).toBe(
      '"q\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u2028\\u2029é😀"',
    );
    // a lone surrogate is what Go's decoder had already made U+FFFD
    expect(goJsonStringify('\ud800')).toBe('"\uFFFD"');
  });

  it('keeps object insertion order and writes compact JSON', () => {
    expect(goJsonStringify({ z: 1, a: [true, null, 'x>'], m: {} })).toBe('{"z":1,"a":[true,null,"x\\u003e"],"m":{}}');
    expect(() => goJsonStringify(Number.NaN)).toThrow();
  });
});
