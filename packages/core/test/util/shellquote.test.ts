import { describe, expect, it } from 'vitest';
import { ShellSplitError, splitCommand } from '../../src/util/shellquote.js';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

interface ShellquoteCase {
  input: string;
  words: string[] | null;
  error?: string;
}

const vector = readVectorJson<{ cases: ShellquoteCase[] }>('crypto', 'shellquote.json');

describe('splitCommand (go-shellquote port)', () => {
  it('has all 49 reference cases', () => {
    expect(vector.cases).toHaveLength(49);
  });

  it.each(vector.cases.map((c) => [JSON.stringify(c.input), c] as const))('splits %s like Go', (_label, c) => {
    if (c.words === null) {
      let thrown: unknown;
      try {
        splitCommand(c.input);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(ShellSplitError);
      expect((thrown as Error).message).toBe(c.error);
    } else {
      expect(splitCommand(c.input)).toEqual(c.words);
    }
  });
});
