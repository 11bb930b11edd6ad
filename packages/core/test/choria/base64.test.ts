import { describe, expect, it } from 'vitest';
import { base64Json, fromBase64, isStrictBase64, jsonObjectText } from '../../src/choria/protocol/encoding.js';

// Wire base64 is judged as Go's base64.StdEncoding.DecodeString judges it: padded standard
// alphabet, length a multiple of four, non-zero padding bits tolerated (Go's non-Strict mode).
describe('strict base64 on the wire', () => {
  it('accepts canonical text and returns its bytes', () => {
    for (const bytes of ['', 'a', 'ab', 'abc', 'abcd', '\u00ff\u0000binary']) {
      const text = Buffer.from(bytes, 'latin1').toString('base64');
      expect(isStrictBase64(text)).toBe(true);
      expect(fromBase64(text, 'x').equals(Buffer.from(bytes, 'latin1'))).toBe(true);
    }
  });

  it('accepts non-zero padding bits as Go does, decoding them away', () => {
    // "QR==" is not what any encoder writes for "A" ("QQ=="), but Go decodes it to "A"
    expect(isStrictBase64('QR==')).toBe(true);
    expect(fromBase64('QR==', 'x').toString()).toBe('A');
    expect(fromBase64('QUJ=', 'x').toString()).toBe('AB');
  });

  it('rejects what Go rejects, naming the document', () => {
    for (const bad of ['QQ', 'QQ=', 'Q===', 'AB$D', 'AB==CD==', 'QUJD\n', ' QUJD', 'QUJD-_==', 'QUJD_w==', '====']) {
      expect(isStrictBase64(bad), bad).toBe(false);
      expect(() => fromBase64(bad, 'v2 transport data'), bad).toThrow('v2 transport data is not valid base64');
    }
  });

  it('renders base64 as a JSON string without escaping work', () => {
    const text = jsonObjectText([['data', base64Json('{"a":"\u00e9"}')]]);
    expect(JSON.parse(text)).toEqual({ data: Buffer.from('{"a":"\u00e9"}').toString('base64') });
  });
});
