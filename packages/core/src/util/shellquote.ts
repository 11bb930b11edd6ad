// Splits the `helper` setting into argv the way the Go provisioner does (go-shellquote, pinned at
// 95032a82bc51). Hand-written on purpose: every npm splitter checked
// disagrees with go-shellquote on some of the 49 reference cases — `shell-quote` expands `$VAR`,
// treats `#` as a comment and returns operator objects; `shlex` splits on `\r` and unescapes
// `\$`/`` \` `` differently inside double quotes; `shellwords` and `string-argv` differ on escapes
// and empty words. A helper command that works with the Go provisioner must get the same argv here.
import { ProvisionerError } from './errors.js';

/** A helper command line that cannot be split; `message` is the upstream go-shellquote text. */
export class ShellSplitError extends ProvisionerError {
  constructor(message: string) {
    super(message);
  }
}

// Only these three separate words; `\r`, `\v` and `\f` are ordinary characters upstream.
const isSeparator = (ch: string | undefined): boolean => ch === ' ' || ch === '\t' || ch === '\n';

// Inside double quotes a backslash only escapes these (plus newline, which it swallows).
const DOUBLE_QUOTE_ESCAPABLE = new Set(['$', '`', '"', '\\']);

/**
 * Split `line` into words with go-shellquote semantics: no expansion of any kind, quotes join
 * with adjacent text, `''` yields an empty word, backslash-newline is a line continuation.
 * Throws {@link ShellSplitError} with the upstream message on unterminated quotes or escapes.
 */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let pos = 0;

  while (pos < line.length) {
    const ch = line[pos];
    if (isSeparator(ch)) {
      pos++;
      continue;
    }
    // A continuation between words must not start an (empty) word of its own.
    if (ch === '\\' && line[pos + 1] === '\n') {
      pos += 2;
      continue;
    }
    const [word, next] = readWord(line, pos);
    words.push(word);
    pos = next;
  }
  return words;
}

/** Reads one word starting at `start`; returns it and the index just past it. */
function readWord(line: string, start: number): [string, number] {
  let word = '';
  let pos = start;

  while (pos < line.length && !isSeparator(line[pos])) {
    const ch = line[pos] as string;
    if (ch === '\\') {
      if (pos + 1 >= line.length) throw new ShellSplitError('Unterminated backslash-escape');
      const escaped = line[pos + 1] as string;
      if (escaped !== '\n') word += escaped;
      pos += 2;
    } else if (ch === "'") {
      const close = line.indexOf("'", pos + 1);
      if (close < 0) throw new ShellSplitError('Unterminated single-quoted string');
      word += line.slice(pos + 1, close);
      pos = close + 1;
    } else if (ch === '"') {
      const [text, next] = readDoubleQuoted(line, pos + 1);
      word += text;
      pos = next;
    } else {
      word += ch;
      pos++;
    }
  }
  return [word, pos];
}

/** Reads the body of a double-quoted string starting after the opening quote. */
function readDoubleQuoted(line: string, start: number): [string, number] {
  let text = '';
  let pos = start;

  while (pos < line.length) {
    const ch = line[pos] as string;
    if (ch === '"') return [text, pos + 1];
    if (ch === '\\' && pos + 1 < line.length) {
      const escaped = line[pos + 1] as string;
      if (escaped === '\n') {
        pos += 2;
        continue;
      }
      if (DOUBLE_QUOTE_ESCAPABLE.has(escaped)) {
        text += escaped;
        pos += 2;
        continue;
      }
    }
    // Any other backslash stays literally, and the character after it is read normally.
    text += ch;
    pos++;
  }
  throw new ShellSplitError('Unterminated double-quoted string');
}
