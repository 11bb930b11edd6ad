import { describe, expect, it } from 'vitest';
import { visibleStrings, visibleText } from '../../src/util/visible-text.js';

describe('visibleText', () => {
  it('writes every control character as a visible escape', () => {
    expect(visibleText('a\u001b[2Jb')).toBe('a\\u001b[2Jb');
    expect(visibleText('bell\u0007')).toBe('bell\\u0007');
    expect(visibleText('x\ny\rz\tw')).toBe('x\\u000ay\\u000dz\\u0009w');
    expect(visibleText('\u0000\u007f\u0085\u009b')).toBe('\\u0000\\u007f\\u0085\\u009b');
    expect(visibleText('\u2028\u2029\u202e\u2066')).toBe('\\u2028\\u2029\\u202e\\u2066');
    expect(visibleText('\u200e\u200f\u061c\ufeff')).toBe('\\u200e\\u200f\\u061c\\ufeff');
  });

  it('escapes a lone surrogate but keeps a pair', () => {
    expect(visibleText('a\ud800b')).toBe('a\\ud800b');
    expect(visibleText('a\udc00')).toBe('a\\udc00');
    expect(visibleText('emoji 😀 ok')).toBe('emoji 😀 ok');
  });

  it('leaves readable text and backslashes alone, so it can be applied twice', () => {
    for (const text of ['plain', 'ünïcode ✓', 'back\\slash', '"quoted"', '<b>html</b>'])
      expect(visibleText(text)).toBe(text);
    const once = visibleText('x\u001by');
    expect(visibleText(once)).toBe(once);
  });
});

describe('visibleStrings', () => {
  it('escapes every string and key of a JSON value and keeps the rest', () => {
    const value = JSON.parse('{"a\\u001bk": ["x\\u0007", 1, true, null, {"__proto__": "p\\n"}]}') as unknown;
    const shown = visibleStrings(value) as Record<string, unknown>;
    expect(JSON.stringify(shown)).toBe('{"a\\\\u001bk":["x\\\\u0007",1,true,null,{"__proto__":"p\\\\u000a"}]}');
    expect(Object.getPrototypeOf({} as Record<string, unknown>)).toBe(Object.prototype);
    expect(Object.getPrototypeOf((shown['a\\u001bk'] as unknown[])[4])).toBe(Object.prototype);
  });

  it('cuts what nests deeper than it shows', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(JSON.stringify(visibleStrings(deep, 3))).toBe('[[["[…]"]]]');
  });
});
