import { describe, expect, it } from 'vitest';
import { SHOWN_TEXT_MAX, visibleStrings, visibleText } from '../../src/util/visible-text.js';

describe('visibleText', () => {
  it('writes every control character as a visible escape', () => {
    expect(visibleText('a\u001b[2Jb')).toBe('a\\u001b[2Jb');
    expect(visibleText('bell\u0007')).toBe('bell\\u0007');
    expect(visibleText('x\ny\rz\tw')).toBe('x\\u000ay\\u000dz\\u0009w');
    expect(visibleText('\u0000\u007f\u0085\u009b')).toBe('\\u0000\\u007f\\u0085\\u009b');
    expect(visibleText('\u2028\u2029\u202e\u2066')).toBe('\\u2028\\u2029\\u202e\\u2066');
    expect(visibleText('\u200e\u200f\u061c\ufeff')).toBe('\\u200e\\u200f\\u061c\\ufeff');
  });

  it('escapes every format character and default-ignorable code point, which a reader cannot see', () => {
    // the seventeen an attacker tried in issue 55, U+FEFF among them
    const invisible = [
      0x200b, 0x200c, 0x200d, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x00ad, 0x180e, 0xfeff, 0x034f, 0x115f, 0x3164,
      0xfe0f, 0xe0001, 0xe0041,
    ];
    for (const cp of invisible) {
      const shown = visibleText(`web1${String.fromCodePoint(cp)}.example.net`);
      expect(shown, cp.toString(16)).not.toMatch(/[\p{Cf}\p{Default_Ignorable_Code_Point}]/u);
      expect(shown, cp.toString(16)).toMatch(/^web1(\\u[0-9a-f]{4}){1,2}\.example\.net$/);
    }
    expect(visibleText('a\u{e0041}b')).toBe('a\\udb40\\udc41b');
    expect(visibleText('soft\u00adhyphen')).toBe('soft\\u00adhyphen');
  });

  it('cuts what it shows to a fixed length and says how long the text was', () => {
    const long = 'x'.repeat(600_000);
    const shown = visibleText(long);
    expect(shown).toBe(`${'x'.repeat(SHOWN_TEXT_MAX)}… (600000 characters)`);
    // escapes count: a text of control characters is cut after as many characters, never mid-escape
    const controls = visibleText('\u0007'.repeat(5_000), 100);
    expect(controls).toMatch(/^(\\u0007){16}… \(5000 characters\)$/);
    expect(visibleText('short', 10)).toBe('short');
    expect(visibleText('x'.repeat(5_000), Infinity)).toHaveLength(5_000);
    expect(visibleStrings({ statusmsg: 'y'.repeat(900) }, 32, 100)).toEqual({
      statusmsg: `${'y'.repeat(100)}… (900 characters)`,
    });
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
