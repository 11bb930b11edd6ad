import { describe, expect, it } from 'vitest';
import { BoundedBuffer, makeRedactor, quoteExcerpt, requestSecrets } from '../../../src/host/helper/output.js';
import { PASSWORD, sampleRequest, TOKEN } from './support.js';

describe('BoundedBuffer', () => {
  it('keeps at most the limit and reports overflow', () => {
    const buf = new BoundedBuffer(5);
    expect(buf.push(Buffer.from('abc'))).toBe(true);
    expect(buf.push(Buffer.from('de'))).toBe(true);
    expect(buf.push(Buffer.from('fgh'))).toBe(false);
    expect(buf.toBuffer().toString()).toBe('abcde');
    expect(buf.totalBytes).toBe(8);
    expect(buf.toText()).toBe('abcde\n[… 3 more bytes dropped]');
    buf.clear();
    expect(buf.toText()).toBe('');
  });
});

describe('quoteExcerpt', () => {
  it('quotes short text whole and cuts long text at 500 bytes', () => {
    expect(quoteExcerpt('a\nb')).toBe('"a\\nb"');
    expect(quoteExcerpt('y'.repeat(600))).toBe(`"${'y'.repeat(500)}"… (600 bytes)`);
  });
});

describe('redaction', () => {
  it('blanks the request secrets, also JSON-escaped, and private key blocks', () => {
    const req = { ...sampleRequest(), jwt: { cht: TOKEN, chpwd: 'pa"ss\\word' } };
    const redact = makeRedactor(requestSecrets(req));
    expect(redact(`token ${TOKEN} and ${JSON.stringify('pa"ss\\word')}`)).toBe('token [redacted] and "[redacted]"');
    expect(redact('{"key":"-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n","x":1}')).toBe(
      '{"key":"[redacted private key]\\n","x":1}',
    );
    expect(redact('-----BEGIN EC PRIVATE KEY-----\nMHcCAQ')).toBe('[redacted private key]');
  });

  it('finds no secrets in a request without JWT claims', () => {
    expect(requestSecrets({ ...sampleRequest(), jwt: null })).toEqual([]);
    expect(requestSecrets(sampleRequest())).toEqual([TOKEN, PASSWORD]);
  });
});
