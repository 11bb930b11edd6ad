// Where a text stops being JSON, said in the provisioner's own words: "`,` or `}` expected at
// position 148". JSON.parse's messages quote the text around the mistake, so they cannot be shown
// where a helper's output must not appear; this scanner names only what was expected and where.
// It follows RFC 8259, as JSON.parse does, without recursion (any nesting depth is fine).

/** The first syntax error of a text that is not JSON. */
export interface JsonSyntaxProblem {
  /** what the scanner expected, or what is wrong, in product words */
  readonly problem: string;
  /** offset in bytes (UTF-8) from the start of the text, counting from 0 */
  readonly position: number;
  /** the problem is the end of the text */
  readonly atEnd: boolean;
}

const VALUE = 'a JSON value';

type Expect =
  'value' | 'value-or-close-array' | 'key-or-close-object' | 'key' | 'colon' | 'object-next' | 'array-next' | 'end';

const EXPECTED_TEXT: Readonly<Record<Exclude<Expect, 'end'>, string>> = {
  value: VALUE,
  'value-or-close-array': `${VALUE} or \`]\``,
  'key-or-close-object': '`"` (a key) or `}`',
  key: '`"` (a key)',
  colon: '`:`',
  'object-next': '`,` or `}`',
  'array-next': '`,` or `]`',
};

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** The end of the string that starts (after its opening quote) at `i`, or a problem. */
function scanString(text: string, i: number): number | { problem: string; at: number } {
  const opened = i - 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20) return { problem: 'a control character (such as a raw line break) inside a string', at: i };
    if (c === 0x5c) {
      const e = text.charCodeAt(i + 1);
      if (e === 0x75) {
        for (let k = 2; k < 6; k++)
          if (!isHex(text.charCodeAt(i + k))) return { problem: 'an invalid \\u escape in a string', at: i };
        i += 6;
        continue;
      }
      if (![0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].includes(e))
        return { problem: 'an invalid escape in a string', at: i };
      i += 2;
      continue;
    }
    i++;
  }
  return { problem: `a string that opens at position ${opened} and is not closed`, at: text.length };
}

/** The end of the number that starts at `i`, or -1. */
function scanNumber(text: string, i: number): number {
  if (text.charCodeAt(i) === 0x2d) i++;
  if (text.charCodeAt(i) === 0x30) i++;
  else if (isDigit(text.charCodeAt(i))) while (isDigit(text.charCodeAt(i))) i++;
  else return -1;
  if (text.charCodeAt(i) === 0x2e) {
    i++;
    if (!isDigit(text.charCodeAt(i))) return -1;
    while (isDigit(text.charCodeAt(i))) i++;
  }
  if (text.charCodeAt(i) === 0x65 || text.charCodeAt(i) === 0x45) {
    i++;
    if (text.charCodeAt(i) === 0x2b || text.charCodeAt(i) === 0x2d) i++;
    if (!isDigit(text.charCodeAt(i))) return -1;
    while (isDigit(text.charCodeAt(i))) i++;
  }
  return i;
}

/** The first syntax error of `text`, or undefined when it is one JSON value. */
export function jsonSyntaxProblem(text: string): JsonSyntaxProblem | undefined {
  const stack: ('object' | 'array')[] = [];
  let expect: Expect = 'value';
  let i = 0;
  const at = (problem: string, index: number): JsonSyntaxProblem => ({
    problem,
    position: Buffer.byteLength(text.slice(0, index), 'utf8'),
    atEnd: index >= text.length,
  });
  const expected = (index: number): JsonSyntaxProblem =>
    expect === 'end' ? at('more text after the JSON value', index) : at(`${EXPECTED_TEXT[expect]} expected`, index);
  /** after a complete value: what the enclosing structure expects next */
  const afterValue = (): Expect =>
    stack.length === 0 ? 'end' : stack[stack.length - 1] === 'object' ? 'object-next' : 'array-next';

  for (;;) {
    while (i < text.length && isSpace(text.charCodeAt(i))) i++;
    if (i >= text.length) return expect === 'end' ? undefined : expected(i);
    const c = text.charCodeAt(i);
    switch (expect) {
      case 'end':
        return expected(i);
      case 'colon':
        if (c !== 0x3a) return expected(i);
        i++;
        expect = 'value';
        continue;
      case 'object-next':
      case 'array-next': {
        const close = expect === 'object-next' ? 0x7d : 0x5d;
        if (c === 0x2c) {
          i++;
          expect = expect === 'object-next' ? 'key' : 'value';
          continue;
        }
        if (c !== close) return expected(i);
        i++;
        stack.pop();
        expect = afterValue();
        continue;
      }
      case 'key-or-close-object':
      case 'key': {
        if (c === 0x7d && expect === 'key-or-close-object') {
          i++;
          stack.pop();
          expect = afterValue();
          continue;
        }
        if (c !== 0x22) return expected(i);
        const end = scanString(text, i + 1);
        if (typeof end !== 'number') return at(end.problem, end.at);
        i = end;
        expect = 'colon';
        continue;
      }
      case 'value':
      case 'value-or-close-array': {
        if (c === 0x5d && expect === 'value-or-close-array') {
          i++;
          stack.pop();
          expect = afterValue();
          continue;
        }
        if (c === 0x7b) {
          i++;
          stack.push('object');
          expect = 'key-or-close-object';
          continue;
        }
        if (c === 0x5b) {
          i++;
          stack.push('array');
          expect = 'value-or-close-array';
          continue;
        }
        if (c === 0x22) {
          const end = scanString(text, i + 1);
          if (typeof end !== 'number') return at(end.problem, end.at);
          i = end;
          expect = afterValue();
          continue;
        }
        if (c === 0x2d || isDigit(c)) {
          const end = scanNumber(text, i);
          if (end < 0) return at('an invalid number', i);
          i = end;
          expect = afterValue();
          continue;
        }
        const literal = ['true', 'false', 'null'].find((w) => text.startsWith(w, i));
        if (literal === undefined) return expected(i);
        i += literal.length;
        expect = afterValue();
        continue;
      }
    }
  }
}

/** "`,` or `}` expected at position 148", or "… at position 154 (the end of the text)". */
export function describeJsonSyntaxProblem(p: JsonSyntaxProblem): string {
  return `${p.problem} at position ${p.position}${p.atEnd ? ' (the end of the text)' : ''}`;
}

/**
 * Why a text JSON.parse refused is not JSON, without quoting it: what is said in place of
 * JSON.parse's own message, which quotes the text around the mistake (where a secret may sit).
 */
export function whyNotJson(text: string): string {
  const problem = jsonSyntaxProblem(text);
  // the scanner follows the same grammar; should it ever accept what JSON.parse refused, say only that
  return problem === undefined ? 'it cannot be parsed' : describeJsonSyntaxProblem(problem);
}

/**
 * JSON.parse for text the provisioner did not write (a node's reply, an event, a helper's output,
 * a JWT's claims, a peer's message): when it is not JSON, `fail(whyNotJson(text))` is thrown
 * instead of JSON.parse's error, whose message quotes the text.
 */
export function parseForeignJson(text: string, fail: (why: string) => Error): unknown {
  const depth = nestingBeyond(text, MAX_FOREIGN_JSON_DEPTH);
  if (depth !== undefined)
    throw fail(`it nests arrays and objects more than ${MAX_FOREIGN_JSON_DEPTH} deep (at position ${depth})`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw fail(whyNotJson(text));
  }
}

/**
 * How deep text from outside may nest arrays and objects. JSON.parse takes any depth, but what
 * handles the value afterwards (JSON.stringify, redaction, the helper's input) recurses, and a
 * value nested 100,000 deep exhausts the stack there. Real replies nest a few levels.
 */
export const MAX_FOREIGN_JSON_DEPTH = 512;

/** The position where `text` first nests deeper than `max` (outside strings), or undefined. */
function nestingBeyond(text: string, max: number): number | undefined {
  // a text cannot open more brackets than it has characters
  if (text.length <= max) return undefined;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return undefined;
}
