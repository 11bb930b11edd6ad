import { describe, expect, it } from 'vitest';
import {
  MAX_FOREIGN_JSON_DEPTH,
  describeJsonSyntaxProblem,
  jsonSyntaxProblem,
  parseForeignJson,
} from '../../src/util/json-syntax.js';

const say = (text: string): string | undefined => {
  const p = jsonSyntaxProblem(text);
  return p === undefined ? undefined : describeJsonSyntaxProblem(p);
};

describe('jsonSyntaxProblem', () => {
  it('accepts what JSON.parse accepts', () => {
    for (const text of [
      '{}',
      '[]',
      ' {"a":[1,-2.5e+3,true,false,null,"x\\n\\u00e9"],"b":{}} \n',
      '"s"',
      '0',
      '[[[[[]]]]]',
      '-0.1E2',
    ]) {
      expect(() => JSON.parse(text)).not.toThrow();
      expect(say(text), text).toBeUndefined();
    }
  });

  it('names what was expected and where, in bytes, without quoting the text', () => {
    const stdout =
      '{"defer":false,"configuration":{"plugin.choria.network.provisioning.client_password":"hunter2-SECRET","plugin.security.choria.seed":"deadbeefSEED"} BROKEN';
    expect(say(stdout)).toBe('`,` or `}` expected at position 148');
    expect(say('{"a":1} x')).toBe('more text after the JSON value at position 8');
    expect(say('{"a" 1}')).toBe('`:` expected at position 5');
    expect(say('{"a":1,}')).toBe('`"` (a key) expected at position 7');
    expect(say('{')).toBe('`"` (a key) or `}` expected at position 1 (the end of the text)');
    expect(say('[1 2]')).toBe('`,` or `]` expected at position 3');
    expect(say('[')).toBe('a JSON value or `]` expected at position 1 (the end of the text)');
    expect(say('{"a":"é" x')).toBe('`,` or `}` expected at position 10');
    expect(say('{"a":"open')).toBe(
      'a string that opens at position 5 and is not closed at position 10 (the end of the text)',
    );
    expect(say('{"a":"x\ny"}')).toBe('a control character (such as a raw line break) inside a string at position 7');
    expect(say('{"a":"\\q"}')).toBe('an invalid escape in a string at position 6');
    expect(say('{"a":01}')).toBe('`,` or `}` expected at position 6');
    expect(say('{"a":-}')).toBe('an invalid number at position 5');
    expect(say('nope')).toBe('a JSON value expected at position 0');
    expect(say('')).toBe('a JSON value expected at position 0 (the end of the text)');
    expect(say('\ufeff{}')).toBe('a JSON value expected at position 0');
  });

  it('finds a problem wherever JSON.parse finds one', () => {
    const samples = [
      '{"a":[1,2,{"b":tru}]}',
      '[1,2',
      '{"a":"b"}}',
      '{"a":1e}',
      '["\\u12g4"]',
      '{"a":.5}',
      '[,]',
      'truex',
    ];
    for (const text of samples) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(jsonSyntaxProblem(text), text).toBeDefined();
    }
  });
});

describe('parseForeignJson', () => {
  it("parses JSON, and otherwise throws the caller's error naming where it broke, never quoting the text", () => {
    expect(parseForeignJson('{"a":[1]}', (why) => new Error(why))).toEqual({ a: [1] });
    const text = '{"password":"hunter2-Xy" BROKEN';
    let thrown: unknown;
    try {
      parseForeignJson(text, (why) => new TypeError(`not JSON: ${why}`));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as Error).message).toBe('not JSON: `,` or `}` expected at position 25');
    expect((thrown as Error).message).not.toContain('hunter2');
  });
});

describe('parseForeignJson nesting', () => {
  const fail = (why: string): Error => new Error(why);
  it('refuses text nested deeper than any reply (what handles the value would exhaust its stack), in any form', () => {
    for (const text of ['['.repeat(100_000) + ']'.repeat(100_000), '['.repeat(MAX_FOREIGN_JSON_DEPTH + 1)]) {
      expect(() => parseForeignJson(text, fail)).toThrow(
        `it nests arrays and objects more than ${MAX_FOREIGN_JSON_DEPTH} deep (at position ${MAX_FOREIGN_JSON_DEPTH})`,
      );
    }
    const objects = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    expect(() => parseForeignJson(objects, fail)).toThrow(
      `more than ${MAX_FOREIGN_JSON_DEPTH} deep (at position ${MAX_FOREIGN_JSON_DEPTH * 5})`,
    );
  });
  it('takes nesting up to the limit, and brackets inside strings count for nothing', () => {
    const deep = '['.repeat(MAX_FOREIGN_JSON_DEPTH) + ']'.repeat(MAX_FOREIGN_JSON_DEPTH);
    expect(() => JSON.stringify(parseForeignJson(deep, fail))).not.toThrow();
    const brackets = JSON.stringify({ s: '['.repeat(10_000) + '\\"{' });
    expect(parseForeignJson(brackets, fail)).toEqual({ s: '['.repeat(10_000) + '\\"{' });
  });
});
