import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HelperCommandError, HelperError } from '../../../src/host/helper/errors.js';
import { ProcessHelper } from '../../../src/host/helper/process-helper.js';
import { encodeHelperRequest } from '../../../src/host/helper/request.js';
import { childProcesses } from '@choria-provisioner/test-support/fleet';
import { blockEventLoop } from '@choria-provisioner/test-support/event-loop';
import { isAlive } from '@choria-provisioner/test-support/processes';
import { until } from '@choria-provisioner/test-support/wait';
import { becomesDead, PASSWORD, q, readPid, sampleRequest, ScriptDir, TOKEN } from './support.js';

// One script whose behaviour is chosen by the node identity, so one ProcessHelper instance goes
// through every fault and must still serve a good request afterwards.
const FAULTY = `#!/bin/sh
request=$(cat)
identity=$(printf '%s\\n' "$request" | sed -n 's/^{"identity":"\\([^"]*\\)".*/\\1/p')
dir=$(dirname "$0")
case $identity in
  hang*) sleep 30 & echo $! > "$dir/$identity.pid"; wait ;;
  daemon) printf '{}'; sleep 30 & echo $! > "$dir/$identity.pid"; exit 0 ;;
  crash) kill -9 $$ ;;
  exit1) printf '{"configuration":{"a":"b"}}'; echo boom >&2; exit 1 ;;
  junk) echo "hello, this is not JSON" ;;
  longjunk) head -c 2000 /dev/zero | tr '\\0' x ;;
  empty) echo "nothing to say" >&2 ;;
  huge) yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ;;
  badtype) printf '{"configuration":{"identity":"badtype","port":8080}}' ;;
  echo-token) printf '%s' "$request" >&2; exit 2 ;;
  privkey) printf '{"key":"-----BEGIN RSA PRIVATE KEY-----\\\\nMIIsecretkeymaterial\\\\n-----END RSA PRIVATE KEY-----\\\\n","configuration":{"port":1}}' ;;
  bigerr) head -c 200000 /dev/zero | tr '\\0' e >&2; printf '{"msg":"ok"}' ;;
  stderr) echo "line on stderr" >&2; printf '{"configuration":{"plugin.choria.server.provision":"false"}}' ;;
  *) printf '{"msg":"%s","configuration":{"identity":"%s","plugin.choria.server.provision":"false"}}' "$identity" "$identity" ;;
esac
`;

const dir = new ScriptDir();
let faulty: string;
let helper: ProcessHelper;

// Every behaviour holds with either companion program that starts the helpers (spawner.ts), and
// without one (helper_spawner none: the provisioner's own process starts them).
const KINDS = ['python3', 'node', 'none'] as const;
const COMPANIONS = ['python3', 'node'] as const;

/** The helpers' pid files: each kind's runs must not find the last kind's. */
function removePidFiles(): void {
  for (const name of ['hang.pid', 'daemon.pid', 'hang-abort.pid', 'hang-close.pid', 'slow.pid'])
    rmSync(dir.file(name), { force: true });
}

/** glibc's posix_spawn leaves its two internal signals (32 and 33, below SIGRTMIN) ignored; nothing sees them. */
const GLIBC_INTERNAL_SIGNALS = (1n << 31n) | (1n << 32n);

beforeAll(() => {
  faulty = dir.script('faulty.sh', FAULTY);
});
afterAll(() => {
  dir.remove();
});

async function failure(identity: string, h: ProcessHelper = helper, signal?: AbortSignal): Promise<HelperError> {
  try {
    await h.run(sampleRequest(identity), { identity, signal });
  } catch (err) {
    if (err instanceof HelperError) return err;
    throw err;
  }
  throw new Error(`expected the ${identity} run to fail`);
}

describe.each(KINDS)('ProcessHelper, helpers started by the %s spawner', (spawner) => {
  beforeAll(() => {
    removePidFiles();
    helper = new ProcessHelper({
      command: q(faulty),
      timeoutMs: 1000,
      maxOutputBytes: 64 * 1024,
      maxStderrBytes: 1000,
      spawner,
    });
  });
  afterAll(async () => {
    await helper.close();
  });

  it('starts the helpers with the spawner it was told to use', async () => {
    await helper.run(sampleRequest('n0'), { identity: 'n0' });
    expect(helper.spawner).toEqual({ kind: spawner });
  });

  it('gives the helper every signal at its default action (none ignored, none blocked) in its own session', async () => {
    const probe = dir.script(
      `signals-${spawner}.sh`,
      `#!/bin/sh\ncat >/dev/null\nign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status)\nblk=$(sed -n 's/^SigBlk:[[:space:]]*//p' /proc/$$/status)\nsid=$(cut -d' ' -f6 /proc/$$/stat)\nprintf '{"configuration":{"ign":"%s","blk":"%s","leader":"%s"}}' "$ign" "$blk" "$([ "$sid" = $$ ] && echo yes || echo no)"\n`,
    );
    const h = new ProcessHelper({ command: q(probe), timeoutMs: 5000, spawner });
    try {
      const r = await h.run(sampleRequest('sig'), { identity: 'sig' });
      expect(r.reply.configuration).toMatchObject({ blk: '0000000000000000', leader: 'yes' });
      const ignored = BigInt(`0x${r.reply.configuration?.['ign'] ?? 'ff'}`);
      expect(ignored & ~GLIBC_INTERNAL_SIGNALS).toBe(0n); // SIGPIPE above all: Python ignores it itself
      if (spawner === 'node') expect(ignored).toBe(0n);
    } finally {
      await h.close();
    }
  });

  it('writes a request larger than a pipe holds whole, while the helper reads it', async () => {
    const counter = dir.script(
      `count-${spawner}.sh`,
      `#!/bin/sh\nn=$(wc -c)\nprintf '{"configuration":{"bytes":"%s"}}' $n\n`,
    );
    const req = { ...sampleRequest('big'), inventory: JSON.stringify({ facts: { blob: 'x'.repeat(300_000) } }) };
    const r = await new ProcessHelper({ command: q(counter), timeoutMs: 5000, spawner }).run(req, { identity: 'big' });
    expect(r.reply.configuration).toEqual({ bytes: String(Buffer.byteLength(encodeHelperRequest(req))) });
  });

  it('runs a good helper and returns its reply, stderr and duration', async () => {
    const result = await helper.run(sampleRequest('stderr'), { identity: 'stderr' });
    expect(result.reply).toEqual({ configuration: { 'plugin.choria.server.provision': 'false' } });
    expect(result.stderr).toBe('line on stderr\n');
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('writes exactly the encoded request on stdin, then EOF', async () => {
    const capture = dir.script('capture.sh', `#!/bin/sh\ncat > "$(dirname "$0")/stdin.bin"\nprintf '{}'\n`);
    const req = sampleRequest('web1.example.net', { ready: true, note: '<a&b>' });
    await new ProcessHelper({ command: q(capture), timeoutMs: 1000, spawner }).run(req, { identity: req.identity });
    expect(readFileSync(dir.file('stdin.bin'), 'utf8')).toBe(encodeHelperRequest(req));
  });

  it('passes quoted arguments exactly as go-shellquote splits them', async () => {
    const argv = dir.script(
      'argv.mjs',
      `process.stdin.resume();process.stdin.on('end',()=>process.stdout.write(JSON.stringify({configuration:{argv:JSON.stringify(process.argv.slice(2))}})));\n`,
    );
    const command = `${q(process.execPath)} ${q(argv)} 'a b' "c\\"d" e\\ f '' '$HOME' "x'y" ~`;
    const result = await new ProcessHelper({ command, timeoutMs: 2000, spawner }).run(sampleRequest(), {
      identity: 'n1',
    });
    expect(JSON.parse(result.reply.configuration?.['argv'] ?? 'null')).toEqual([
      'a b',
      'c"d',
      'e f',
      '',
      '$HOME',
      "x'y",
      '~',
    ]);
  });

  it('kills a hanging helper and its child on timeout', async () => {
    const err = await failure('hang');
    expect(err.kind).toBe('timeout');
    expect(err.message).toContain(`helper ${faulty} failed for hang: timed out after 1000 ms`);
    const child = await readPid(dir.file('hang.pid'));
    expect(child).toBeGreaterThan(0);
    await becomesDead(child);
  });

  it('times out when the helper exits but a child keeps stdout open, and kills the child', async () => {
    const err = await failure('daemon');
    expect(err.kind).toBe('timeout');
    expect(err.message).toContain('it exited with status 0');
    expect(err.message).toContain('kept its stdout or stderr open');
    const child = await readPid(dir.file('daemon.pid'));
    expect(child).toBeGreaterThan(0);
    await becomesDead(child);
  });

  it('reports a helper killed by a signal', async () => {
    const err = await failure('crash');
    expect(err.kind).toBe('signal');
    expect(err.signal).toBe('SIGKILL');
    expect(err.message).toContain('failed for crash: was killed by signal SIGKILL');
  });

  it('discards valid JSON when the exit status is non-zero, quoting stdout and stderr', async () => {
    const err = await failure('exit1');
    expect(err.kind).toBe('exit');
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe(
      `helper ${faulty} failed for exit1: exited with status 1 (its reply is discarded: a non-zero exit always fails the run; to retry later exit 0 with "defer": true); ` +
        `stdout: "{\\"configuration\\":{\\"a\\":\\"b\\"}}"; stderr: "boom\\n"`,
    );
    expect(err.stderr).toBe('boom\n');
    // the monitor's text: sizes and where the text is, never the text
    expect(err.publicMessage).toBe(
      `helper ${faulty} failed for exit1: exited with status 1 (its reply is discarded: a non-zero exit always fails the run; to retry later exit 0 with "defer": true); ` +
        'it printed 27 bytes on stdout and 5 bytes on stderr (the text is in the log at debug level)',
    );
  });

  it('reports junk output as invalid JSON, quoting at most 500 bytes', async () => {
    const junk = await failure('junk');
    expect(junk.kind).toBe('invalid-json');
    expect(junk.message).toContain('failed for junk: stdout is not valid JSON: ');
    expect(junk.message).toContain('stdout: "hello, this is not JSON\\n"');
    expect(junk.publicMessage).toBe(
      `helper ${faulty} failed for junk: stdout is not valid JSON: 24 bytes that are not JSON: a JSON value expected at position 0; it printed 24 bytes on stdout and 0 bytes on stderr (the text is in the log at debug level)`,
    );
    const long = await failure('longjunk');
    expect(long.message).toContain(`stdout: ${JSON.stringify('x'.repeat(500))}… (2000 bytes)`);
    expect(long.message).not.toContain('x'.repeat(501));
  });

  it('reports empty output', async () => {
    const err = await failure('empty');
    expect(err.kind).toBe('empty');
    expect(err.message).toContain('failed for empty: printed nothing on stdout');
    expect(err.message).toContain('stderr: "nothing to say\\n"');
  });

  it('kills a helper whose output exceeds the cap', async () => {
    const err = await failure('huge');
    expect(err.kind).toBe('too-large');
    expect(err.message).toContain('printed more than 65536 bytes on stdout');
  });

  it('rejects non-string configuration values with the path', async () => {
    const err = await failure('badtype');
    expect(err.kind).toBe('invalid-reply');
    expect(err.message).toContain(
      'failed for badtype: reply is invalid: configuration["port"] must be a string, got number 8080',
    );
    expect(err.publicMessage).toContain(
      'failed for badtype: reply is invalid: configuration["port"] must be a string, got a number;',
    );
    expect(err.publicMessage).not.toContain('8080');
  });

  it('keeps the provisioning token, broker password and private keys out of errors', async () => {
    const echoed = await failure('echo-token');
    expect(echoed.kind).toBe('exit');
    for (const text of [echoed.message, echoed.stderr]) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(PASSWORD);
      expect(text).toContain('[redacted]');
    }
    expect(echoed.publicMessage).not.toContain('[redacted]');
    // helper test shows the operator what was printed
    expect(echoed.unredactedOutput()?.stderr).toContain(TOKEN);
    const key = await failure('privkey');
    expect(key.message).not.toContain('MIIsecretkeymaterial');
    expect(key.message).toContain('\\"key\\":\\"[redacted]\\"');
  });

  it('bounds stderr without failing the run', async () => {
    const result = await helper.run(sampleRequest('bigerr'), { identity: 'bigerr' });
    expect(result.reply).toEqual({ msg: 'ok' });
    expect(result.stderr.startsWith('e'.repeat(1000))).toBe(true);
    expect(result.stderr).toContain('199000 more bytes dropped');
  });

  it('still serves a good request after all the faults', async () => {
    const results = await Promise.all(['n1', 'n2', 'n3'].map((id) => helper.run(sampleRequest(id), { identity: id })));
    expect(results.map((r) => r.reply.configuration?.['identity'])).toEqual(['n1', 'n2', 'n3']);
  });

  it('survives a helper that exits without reading its (large) input', async () => {
    const lazy = dir.script('lazy.sh', `#!/bin/sh\nprintf '{"msg":"did not read"}'\n`);
    const req = { ...sampleRequest(), inventory: JSON.stringify({ facts: { blob: 'z'.repeat(2 * 1024 * 1024) } }) };
    const result = await new ProcessHelper({ command: q(lazy), timeoutMs: 2000, spawner }).run(req, {
      identity: 'lazy',
    });
    expect(result.reply).toEqual({ msg: 'did not read' });
  });

  it('aborts via AbortSignal, killing the helper and its child', async () => {
    const abortable = new ProcessHelper({ command: q(faulty), timeoutMs: 5000, spawner });
    const controller = new AbortController();
    const pending = failure('hang-abort', abortable, controller.signal);
    const child = await readPid(dir.file('hang-abort.pid'));
    expect(isAlive(child)).toBe(true);
    controller.abort();
    const err = await pending;
    expect(err.kind).toBe('aborted');
    expect(err.message).toContain('failed for hang-abort: aborted by the caller');
    await becomesDead(child);
    expect((await failure('n1', abortable, AbortSignal.abort())).kind).toBe('aborted');
  });

  it('an abort right after the start (the spawner may not have started the helper yet) fails the run as aborted', async () => {
    const h = new ProcessHelper({ command: q(faulty), timeoutMs: 5000, spawner });
    try {
      const controller = new AbortController();
      const pending = failure('queued', h, controller.signal);
      // the kill leaves right behind the run message: usually the spawner has only queued the run
      controller.abort();
      const err = await pending;
      expect(err.kind).toBe('aborted');
      expect(err.message).toContain('failed for queued: aborted by the caller');
      expect((await h.run(sampleRequest('after'), { identity: 'after' })).reply.msg).toBe('after');
    } finally {
      await h.close();
    }
  });

  it('close() kills runs in progress and refuses new ones', async () => {
    const closing = new ProcessHelper({ command: q(faulty), timeoutMs: 5000, spawner });
    const pending = failure('hang-close', closing);
    const child = await readPid(dir.file('hang-close.pid'));
    expect(isAlive(child)).toBe(true);
    await closing.close();
    const err = await pending;
    expect(err.kind).toBe('aborted');
    await becomesDead(child);
    expect(err.message).toContain('the helper runner was closed');
    expect((await failure('n1', closing)).message).toContain('the helper runner is closed');
  });

  it('reports a program that cannot be started', async () => {
    const missing = await failure('n1', new ProcessHelper({ command: `${dir.file('missing')} --flag`, spawner }));
    expect(missing.kind).toBe('spawn');
    expect(missing.message).toBe(
      `helper ${dir.file('missing')} failed for n1: cannot start ${dir.file('missing')}: spawn ${dir.file('missing')} ENOENT`,
    );
    const plain = dir.script('not-exec.sh', '#!/bin/sh\n');
    const { chmodSync } = await import('node:fs');
    chmodSync(plain, 0o644);
    expect((await failure('n1', new ProcessHelper({ command: plain, spawner }))).message).toContain('EACCES');
    expect((await failure('n1', new ProcessHelper({ command: 'no-such-helper-on-path', spawner }))).message).toContain(
      'spawn no-such-helper-on-path ENOENT',
    );
    const elsewhere = await failure(
      'n1',
      new ProcessHelper({ command: q(faulty), cwd: dir.file('no-such-dir'), spawner }),
    );
    expect(elsewhere.kind).toBe('spawn');
    expect(elsewhere.message).toContain('ENOENT');
  });

  it('rejects unusable command lines with the upstream texts', () => {
    expect(() => new ProcessHelper({ command: '   ' })).toThrow(
      new HelperCommandError('cannot parse helper command: empty'),
    );
    expect(() => new ProcessHelper({ command: '/bin/helper "abc' })).toThrow(
      'cannot parse helper command: Unterminated double-quoted string',
    );
  });
});

// The time limit is the helper's own: a provisioner whose event loop is busy (its start-up work,
// a burst of replies from two sites) reads the spawner's reports late, and a run that ended well
// within its limit must not be reported as timed out because of that.
describe.each(KINDS)('ProcessHelper time limit under a blocked event loop (%s spawner)', (spawner) => {
  beforeAll(removePidFiles);
  const LIMIT_MS = 500;

  it('a helper that answered within its limit succeeds although its report was read after the limit', async () => {
    const quick = dir.script('quick.sh', `#!/bin/sh\nsleep 0.05\nprintf '{"msg":"quick"}'\n`);
    const h = new ProcessHelper({ command: q(quick), timeoutMs: LIMIT_MS, spawner });
    try {
      const ids = ['b1', 'b2', 'b3', 'b4', 'b5', 'b6'];
      const runs = ids.map((id) =>
        h.run(sampleRequest(id), { identity: id }).then(
          (r) => r.reply.msg,
          (err: unknown) => (err instanceof Error ? err.message : String(err)),
        ),
      );
      // the run messages leave on this tick; the helpers answer in ~50 ms while this loop is stuck
      blockEventLoop(LIMIT_MS * 1.5);
      expect(await Promise.all(runs)).toEqual(ids.map(() => 'quick'));
    } finally {
      await h.close();
    }
  });

  it('a helper that really runs past its limit is still timed out and killed, also when its report is read late', async () => {
    const slow = dir.script('slow.sh', `#!/bin/sh\nsleep 30 & echo $! > "$(dirname "$0")/slow.pid"\nwait\n`);
    const h = new ProcessHelper({ command: q(slow), timeoutMs: LIMIT_MS, spawner });
    try {
      const started = performance.now();
      const pending = failure('slow', h);
      blockEventLoop(LIMIT_MS * 1.5);
      const err = await pending;
      expect(err.kind).toBe('timeout');
      expect(err.message).toContain(
        `helper ${slow} failed for slow: timed out after ${LIMIT_MS} ms; killed it and the processes it started`,
      );
      expect(performance.now() - started).toBeLessThan(LIMIT_MS + 5000);
      await becomesDead(await readPid(dir.file('slow.pid')));
    } finally {
      await h.close();
    }
  });
});

describe('ProcessHelper.close() in a process with nothing else to do', () => {
  it('keeps the process alive until the helper spawner has exited (the built library, in a child process)', async () => {
    const { spawnSync } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const internal = fileURLToPath(new URL('../../../dist/internal.js', import.meta.url));
    // after one helper run the spawner is idle and unref'd: awaiting close() must still finish
    const script = [
      `const { createHelperRunner } = await import(${JSON.stringify(internal)});`,
      `const h = createHelperRunner({ command: 'cat', timeoutMs: 5000 });`,
      `await h.run({ identity: 'n1', csr: null, ed25519_pubkey: null, inventory: '{}', jwt: null }, { identity: 'n1' }).catch(() => undefined);`,
      `await h.close();`,
      `process.stdout.write('closed\\n');`,
    ].join('\n');
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('closed\n');
  });
});

describe.each(COMPANIONS)('ProcessHelper spawner processes (%s)', (spawner) => {
  const spawnerPids = (): Set<number> => new Set(childProcesses('spawner-child'));
  const newOnes = (before: Set<number>): number[] => [...spawnerPids()].filter((pid) => !before.has(pid));
  let slow: string;
  beforeAll(() => {
    slow = dir.script('slow-ok.sh', `#!/bin/sh\ncat >/dev/null\nsleep 0.5\nprintf '{"configuration":{"a":"b"}}'\n`);
  });

  it('helpers running at the same time are started by as many spawners as allowed; close() ends them all', async () => {
    const before = spawnerPids();
    const h = new ProcessHelper({ command: q(slow), timeoutMs: 5000, spawners: 2, spawner });
    try {
      const runs = ['a1', 'a2', 'a3', 'a4'].map((id) =>
        h.run(sampleRequest(`${id}.example.net`), { identity: `${id}.example.net` }),
      );
      // each run goes to the spawner with the fewest in flight: two each
      for (const r of await Promise.all(runs)) expect(r.reply.configuration).toEqual({ a: 'b' });
      const started = newOnes(before);
      expect(started).toHaveLength(2);
      await h.close();
      for (const pid of started) await becomesDead(pid);
    } finally {
      await h.close();
    }
  });

  it('warmUp() starts one spawner before the first run; close() ends it', async () => {
    const before = spawnerPids();
    const h = new ProcessHelper({ command: q(slow), timeoutMs: 5000, spawners: 2, spawner });
    try {
      h.warmUp();
      // one snapshot of /proc: the process started by warmUp() and nothing else
      let started: number[] = [];
      await until('one spawner to start', () => (started = newOnes(before)).length === 1, 5000);
      expect(isAlive(started[0] as number)).toBe(true);
      await h.close();
      for (const pid of started) await becomesDead(pid);
    } finally {
      await h.close();
    }
  });

  it('a spawner killed mid-run: the run fails, its helper and what that started are killed, the next run gets a new spawner', async () => {
    const pidFile = dir.file(`orphan-${spawner}.pid`);
    rmSync(pidFile, { force: true });
    const script = dir.script(
      `orphan-${spawner}.sh`,
      `#!/bin/sh\ncase "$(cat)" in\n  *'"orphan'*) sleep 30 & echo $! > ${q(pidFile)}; wait ;;\n  *) printf '{"configuration":{"a":"b"}}' ;;\nesac\n`,
    );
    const before = spawnerPids();
    const h = new ProcessHelper({ command: q(script), timeoutMs: 20_000, spawners: 1, spawner });
    try {
      const pending = failure('orphan', h);
      const orphan = await readPid(pidFile);
      const [companion] = newOnes(before);
      expect(companion).toBeDefined();
      process.kill(companion as number, 'SIGKILL');
      const err = await pending;
      expect(err.kind).toBe('spawn');
      expect(err.message).toContain('the helper spawner process exited before');
      await becomesDead(orphan);
      expect((await h.run(sampleRequest('after'), { identity: 'after' })).reply.configuration).toEqual({ a: 'b' });
      expect(newOnes(before).filter((pid) => pid !== companion)).toHaveLength(1);
    } finally {
      await h.close();
    }
  });

  it('one helper at a time needs one spawner only', async () => {
    const before = spawnerPids();
    const h = new ProcessHelper({ command: q(slow), timeoutMs: 5000, spawners: 2, spawner });
    try {
      for (const id of ['b1', 'b2', 'b3'])
        expect(
          (await h.run(sampleRequest(`${id}.example.net`), { identity: `${id}.example.net` })).reply.configuration,
        ).toEqual({ a: 'b' });
      expect(newOnes(before)).toHaveLength(1);
    } finally {
      await h.close();
    }
  });

  it('refuses a spawner count that is not a positive integer', () => {
    for (const spawners of [0, -1, 1.5])
      expect(() => new ProcessHelper({ command: q(slow), spawners })).toThrow(
        /number of helper spawners must be a positive integer/,
      );
  });
});

describe('ProcessHelper without a spawner process (helper_spawner none)', () => {
  it('starts the helpers from this process, starts no spawner, and close() kills a helper still running', async () => {
    const pidFile = dir.file('inline-hang.pid');
    rmSync(pidFile, { force: true });
    const script = dir.script(
      'inline-parent.sh',
      `#!/bin/sh\ncase "$(cat)" in\n  *'"hang'*) sleep 30 & echo $! > ${q(pidFile)}; wait ;;\n  *) printf '{"configuration":{"parent":"%s"}}' "$PPID" ;;\nesac\n`,
    );
    const before = new Set(childProcesses('spawner-child'));
    const h = new ProcessHelper({ command: q(script), timeoutMs: 20_000, spawner: 'none' });
    try {
      h.warmUp();
      const runs = ['c1', 'c2', 'c3'].map((id) =>
        h.run(sampleRequest(`${id}.example.net`), { identity: `${id}.example.net` }),
      );
      for (const r of await Promise.all(runs)) expect(r.reply.configuration).toEqual({ parent: String(process.pid) });
      const hanging = failure('hang', h);
      const orphan = await readPid(pidFile);
      expect(childProcesses('spawner-child').filter((pid) => !before.has(pid))).toEqual([]);
      await h.close();
      await becomesDead(orphan);
      await hanging;
    } finally {
      await h.close();
    }
  });
});

// By default the Node companion starts the helpers on every host, python3 on PATH or not; under
// 'auto' the Python companion is used where it works, and the Node one takes over when it cannot
// come up. Each case runs the built library in a child process whose PATH decides what `python3` is.
describe('ProcessHelper spawner choice', () => {
  let bin: string;
  let answer: string;
  beforeAll(() => {
    bin = dir.file('fake-bin');
    answer = dir.script('answer.sh', `#!/bin/sh\nprintf '{"configuration":{"a":"b"}}'\n`);
  });

  async function runIn(
    path: string,
    setting: string | undefined,
  ): Promise<{ outcome: string; spawner: unknown; notices: unknown[] }> {
    const { spawnSync } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const internal = fileURLToPath(new URL('../../../dist/internal.js', import.meta.url));
    const script = [
      `const { ProcessHelper } = await import(${JSON.stringify(internal)});`,
      `const h = new ProcessHelper({ command: ${JSON.stringify(q(answer))}, timeoutMs: 5000${setting === undefined ? '' : `, spawner: ${JSON.stringify(setting)}`} });`,
      `const notices = [];`,
      `h.warmUp((n) => notices.push(n));`,
      `const outcome = await h.run({ identity: 'n1', csr: null, ed25519_pubkey: null, inventory: '{}', jwt: null }, { identity: 'n1' }).then((r) => JSON.stringify(r.reply.configuration), (e) => e.message);`,
      `process.stdout.write(JSON.stringify({ outcome, spawner: h.spawner, notices }));`,
      `await h.close();`,
    ].join('\n');
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
      env: { ...process.env, PATH: path },
    });
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as { outcome: string; spawner: unknown; notices: unknown[] };
  }

  function fakePython(body: string): string {
    rmSync(bin, { recursive: true, force: true });
    mkdirSync(bin, { recursive: true });
    dir.script('fake-bin/python3', `#!/bin/sh\n${body}\n`);
    return bin;
  }

  it('uses the Node companion by default, also where python3 works (the same on every host)', async () => {
    const node = {
      outcome: '{"a":"b"}',
      spawner: { kind: 'node' },
      notices: [{ level: 'info', message: 'helper processes are started by the node spawner' }],
    };
    expect(await runIn(process.env['PATH'] ?? '', undefined)).toEqual(node);
    expect(await runIn(dir.file('empty-path'), undefined)).toEqual(node);
  });

  it('under auto, uses python3 when it is on PATH (the machine this runs on has it: .ci/run installs it)', async () => {
    expect(await runIn(process.env['PATH'] ?? '', 'auto')).toEqual({
      outcome: '{"a":"b"}',
      spawner: { kind: 'python3' },
      notices: [{ level: 'info', message: 'helper processes are started by the python3 spawner (posix_spawn)' }],
    });
  });

  it('under auto, falls back to the Node spawner when python3 is not on PATH, exits at once, or says it cannot work here', async () => {
    const missing = await runIn(dir.file('empty-path'), 'auto');
    expect(missing).toMatchObject({ outcome: '{"a":"b"}', spawner: { kind: 'node' } });
    expect(JSON.stringify(missing.spawner)).toContain('ENOENT');
    const fellBack = (why: string): unknown => [
      {
        level: 'warn',
        message: `python3 cannot start the helper processes (${why}): the node spawner starts them, at about twice the CPU per helper`,
      },
    ];
    expect(await runIn(fakePython('exit 3'), 'auto')).toEqual({
      outcome: '{"a":"b"}',
      spawner: { kind: 'node', fallbackReason: 'it exited with status 3' },
      notices: fellBack('it exited with status 3'),
    });
    expect(
      await runIn(fakePython(`echo '{"t":"unsupported","why":"python 3.7 is older than 3.9"}'; read -r line`), 'auto'),
    ).toEqual({
      outcome: '{"a":"b"}',
      spawner: { kind: 'node', fallbackReason: 'python 3.7 is older than 3.9' },
      notices: fellBack('python 3.7 is older than 3.9'),
    });
  });

  it('told to use python3, fails the run with the reason when it cannot come up', async () => {
    expect(await runIn(fakePython('exit 3'), 'python3')).toEqual({
      outcome: `helper ${answer} failed for n1: the python3 helper spawner could not start: it exited with status 3 before ${answer} finished`,
      spawner: { kind: 'python3' },
      notices: [
        {
          level: 'warn',
          message:
            'helper_spawner python3: it cannot start the helper processes (it exited with status 3); every helper run fails until it can',
        },
      ],
    });
  });

  it('told to use none, says so', async () => {
    expect(await runIn(dir.file('empty-path'), 'none')).toEqual({
      outcome: '{"a":"b"}',
      spawner: { kind: 'none' },
      notices: [
        {
          level: 'info',
          message: 'helper processes are started by the provisioner process itself (helper_spawner none)',
        },
      ],
    });
  });

  it('refuses an unknown setting', () => {
    expect(() => new ProcessHelper({ command: q(answer), spawner: 'perl' as 'node' })).toThrow(
      'the helper spawner must be one of auto, python3, node, none, got perl',
    );
  });
});
