import { describe, expect, it } from 'vitest';
import { BoundedBuffer, quoteExcerpt, requestSecrets } from '../../../src/host/helper/output.js';
import { makeRedactor } from '../../../src/util/redact.js';
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

describe('request secrets', () => {
  it('are the token and the broker password the request hands to the helper; the redactor blanks them, also JSON-escaped', () => {
    const req = { ...sampleRequest(), jwt: { cht: TOKEN, chpwd: 'pa"ss\\word' } };
    const redact = makeRedactor(requestSecrets(req));
    expect(redact(`echo ${TOKEN} and ${JSON.stringify('pa"ss\\word')}`)).toBe('echo [redacted] and "[redacted]"');
  });

  it('are none in a request without JWT claims', () => {
    expect(requestSecrets({ ...sampleRequest(), jwt: null })).toEqual([]);
    expect(requestSecrets(sampleRequest())).toEqual([TOKEN, PASSWORD]);
  });
});
