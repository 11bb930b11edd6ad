// `choria-provisioner helper test` prints what a node sent (its inventory, in the request) and what
// the helper printed (which may echo it) with every control character as a visible escape.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { helperTestCommand } from '../src/commands/helper-test.js';
import { capture } from './capture-io.js';

const HOSTILE = 'web\u001b[2J\u001b[31m\u0007\u009b';
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('helper test', () => {
  it('shows the request and what the helper echoed with visible escapes, keeping its lines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'helper-test-escape-'));
    const helper = join(dir, 'echo-helper.mjs');
    writeFileSync(
      helper,
      [
        '#!/usr/bin/env node',
        "let input = '';",
        "process.stdin.on('data', (c) => (input += c));",
        "process.stdin.on('end', () => {",
        "  process.stderr.write('got: ' + JSON.parse(input).inventory + '\\nsecond line\\n');",
        '  process.stdout.write(JSON.stringify({ configuration: { identity: JSON.parse(input).identity } }));',
        '});',
      ].join('\n'),
    );
    chmodSync(helper, 0o755);
    const config = join(dir, 'provisioner.yaml');
    writeFileSync(config, `helper: ${helper}\ntoken: s3cret\n`);
    const request = join(dir, 'request.json');
    writeFileSync(
      request,
      JSON.stringify({
        identity: 'n1.example.net',
        csr: '',
        inventory: JSON.stringify({ facts: { motd: HOSTILE } }),
        ed25519_pubkey: '',
      }),
    );
    const io = capture();
    const code = await helperTestCommand(
      { config, choriaConfig: undefined, identity: undefined, request, save: undefined, json: false },
      io,
    );
    expect(io.stdout).not.toMatch(RAW);
    expect(io.stdout).toContain('\\u001b[2J');
    expect(io.stdout).toMatch(/got: .*\\u001b\[2J.*\nsecond line/);
    expect(code).toBe(0);
    const json = capture();
    await helperTestCommand(
      { config, choriaConfig: undefined, identity: undefined, request, save: undefined, json: true },
      json,
    );
    expect(json.stdout).not.toMatch(RAW);
  });
});
