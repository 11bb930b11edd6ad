// What a node sends cannot act on a terminal or forge a log line: the text log and the JSON log
// show every control character as a visible escape (util/logger.ts, util/visible-text.ts).
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/util/logger.js';
import { until } from '@choria-provisioner/test-support/wait';

const HOSTILE = 'evil\u001b[2J\u001b[31mred\u0007\nforged\r2026-12-06T17:00:00.000Z ERROR forged: line\u009b\u202e';
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/;

afterEach(() => vi.restoreAllMocks());

describe('the log shows control characters as visible escapes', () => {
  it('in the text log: one record, one line, no raw control character', () => {
    const written: string[] = [];
    // winston's console transport writes to console._stdout where there is one, else console.log
    const out = (console as unknown as { _stdout?: NodeJS.WriteStream })._stdout;
    if (out !== undefined)
      vi.spyOn(out, 'write').mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
    vi.spyOn(console, 'log').mockImplementation(
      (...args: unknown[]) => void written.push(`${args.map(String).join(' ')}\n`),
    );
    const logger = createLogger({ site: 'lon' });
    logger.warn(`unexpected reply from ${HOSTILE}`, { sender: HOSTILE, nested: { statusmsg: HOSTILE } });
    vi.restoreAllMocks();
    const text = written.join('');
    expect(text).not.toMatch(RAW);
    expect(text.split('\n').filter((l) => l !== '')).toHaveLength(1);
    expect(text).toContain('evil\\u001b[2J\\u001b[31mred\\u0007\\u000aforged\\u000d2026');
  });

  it('in the JSON log: what a reader decodes is the escape, not the character', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'log-escape-')), 'provisioner.log');
    const logger = createLogger({ logfile: file, site: 'lon' });
    logger.warn(`ignoring reply from ${HOSTILE}`, { sender: HOSTILE });
    await until(
      'the log written',
      () => existsSync(file) && readFileSync(file, 'utf8').includes('ignoring reply'),
      5_000,
    );
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0] as string) as { message: string; sender: string };
    expect(entry.message).not.toMatch(RAW);
    expect(entry.sender).not.toMatch(RAW);
    expect(entry.message).toContain('\\u001b[2J');
    expect(text).not.toMatch(RAW);
  });
});
