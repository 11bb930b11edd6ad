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

/** Where the scanner is: the offset in the text, the structures open around it and what may come next. */
interface Scan {
  readonly text: string;
  /** the arrays and objects open at `i`, innermost last */
  readonly stack: ('object' | 'array')[];
  expect: Expect;
  /** offset in UTF-16 units */
  i: number;
}

/** What one step of the scanner found: the text's first syntax error, or undefined to scan on. */
type Step = JsonSyntaxProblem | undefined;

/** The first syntax error of `text`, or undefined when it is one JSON value. */
export function jsonSyntaxProblem(text: string): JsonSyntaxProblem | undefined {
  const scan: Scan = { text, stack: [], expect: 'value', i: 0 };
  for (;;) {
    while (scan.i < text.length && isSpace(text.charCodeAt(scan.i))) scan.i++;
    if (scan.i >= text.length) return scan.expect === 'end' ? undefined : expected(scan);
    const problem = step(scan, text.charCodeAt(scan.i));
    if (problem !== undefined) return problem;
  }
}

/** Reads the token starting with `c` (at `scan.i`, not a space) as what `scan.expect` allows. */
function step(scan: Scan, c: number): Step {
  switch (scan.expect) {
    case 'end':
      return expected(scan);
    case 'colon':
      if (c !== 0x3a) return expected(scan);
      scan.i++;
      scan.expect = 'value';
      return undefined;
    case 'object-next':
    case 'array-next':
      return readAfterMember(scan, c);
    case 'key-or-close-object':
    case 'key':
      return readKey(scan, c);
    case 'value':
    case 'value-or-close-array':
      return readValue(scan, c);
  }
}

/** The problem `problem` at `index` (UTF-16 units), its position counted in UTF-8 bytes. */
function at(text: string, problem: string, index: number): JsonSyntaxProblem {
  return { problem, position: Buffer.byteLength(text.slice(0, index), 'utf8'), atEnd: index >= text.length };
}

/** What was expected at the scanner's offset did not come. */
function expected(scan: Scan): JsonSyntaxProblem {
  return scan.expect === 'end'
    ? at(scan.text, 'more text after the JSON value', scan.i)
    : at(scan.text, `${EXPECTED_TEXT[scan.expect]} expected`, scan.i);
}

/** After a complete value: what the enclosing structure expects next. */
function afterValue(scan: Scan): Expect {
  return scan.stack.length === 0
    ? 'end'
    : scan.stack[scan.stack.length - 1] === 'object'
      ? 'object-next'
      : 'array-next';
}

/** Steps over the `]` or `}` at the offset: the innermost structure is a complete value. */
function closeStructure(scan: Scan): Step {
  scan.i++;
  scan.stack.pop();
  scan.expect = afterValue(scan);
  return undefined;
}

/** Steps over the `[` or `{` at the offset. */
function openStructure(scan: Scan, structure: 'object' | 'array'): Step {
  scan.i++;
  scan.stack.push(structure);
  scan.expect = structure === 'object' ? 'key-or-close-object' : 'value-or-close-array';
  return undefined;
}

/** After a member of an object or an element of an array: `,` or the structure's closing bracket. */
function readAfterMember(scan: Scan, c: number): Step {
  if (c === 0x2c) {
    scan.i++;
    scan.expect = scan.expect === 'object-next' ? 'key' : 'value';
    return undefined;
  }
  if (c !== (scan.expect === 'object-next' ? 0x7d : 0x5d)) return expected(scan);
  return closeStructure(scan);
}

/** A member's key (or, right after `{`, the `}` of an empty object). */
function readKey(scan: Scan, c: number): Step {
  if (c === 0x7d && scan.expect === 'key-or-close-object') return closeStructure(scan);
  if (c !== 0x22) return expected(scan);
  const end = scanString(scan.text, scan.i + 1);
  if (typeof end !== 'number') return at(scan.text, end.problem, end.at);
  scan.i = end;
  scan.expect = 'colon';
  return undefined;
}

/** A value (or, right after `[`, the `]` of an empty array). */
function readValue(scan: Scan, c: number): Step {
  if (c === 0x5d && scan.expect === 'value-or-close-array') return closeStructure(scan);
  if (c === 0x7b) return openStructure(scan, 'object');
  if (c === 0x5b) return openStructure(scan, 'array');
  if (c === 0x22) {
    const end = scanString(scan.text, scan.i + 1);
    if (typeof end !== 'number') return at(scan.text, end.problem, end.at);
    return endValue(scan, end);
  }
  if (c === 0x2d || isDigit(c)) {
    const end = scanNumber(scan.text, scan.i);
    if (end < 0) return at(scan.text, 'an invalid number', scan.i);
    return endValue(scan, end);
  }
  const literal = ['true', 'false', 'null'].find((w) => scan.text.startsWith(w, scan.i));
  if (literal === undefined) return expected(scan);
  return endValue(scan, scan.i + literal.length);
}

/** A string, number or literal value ends at `end`. */
function endValue(scan: Scan, end: number): Step {
  scan.i = end;
  scan.expect = afterValue(scan);
  return undefined;
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
