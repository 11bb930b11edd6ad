import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HelperError } from '../../../src/host/helper/errors.js';
import { PoolHelper } from '../../../src/host/helper/pool-helper.js';
import { isAlive } from '@choria-provisioner/test-support/processes';
import { blockEventLoopFromCheckPhase } from '@choria-provisioner/test-support/event-loop';
import { sleep, until } from '@choria-provisioner/test-support/wait';
import { becomesDead, q, readPid, sampleRequest, ScriptDir } from './support.js';

// A JSON-lines helper whose behaviour is chosen by the identity prefix.
const POOL_SCRIPT = `
import { createInterface } from 'node:readline';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const dir = process.argv[2];
createInterface({ input: process.stdin }).on('line', (line) => {
  const id = JSON.parse(line).identity;
  if (id.startsWith('die')) process.exit(3);
  if (id.startsWith('hang')) {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    writeFileSync(dir + '/' + id + '.pid', String(child.pid));
    return;
  }
  if (id.startsWith('junk')) return void process.stdout.write('not json at all\\n');
  if (id.startsWith('bad')) return void process.stdout.write('{"configuration":{"port":1}}\\n');
  if (id.startsWith('stderr')) process.stderr.write('about ' + id + '\\n');
  if (id.startsWith('long')) return void setTimeout(() => process.stdout.write(JSON.stringify({ msg: String(process.pid), configuration: { identity: id } }) + '\\n'), 900);
  if (id.startsWith('wait')) return void setTimeout(() => process.stdout.write(JSON.stringify({ msg: String(process.pid), configuration: { identity: id } }) + '\\n'), 200);
  const delay = (Number(/(\\d+)$/.exec(id)?.[1] ?? 0) % 5) * 4;
  setTimeout(() => process.stdout.write(JSON.stringify({ msg: String(process.pid), configuration: { identity: id } }) + '\\n'), delay);
});
`;

const dir = new ScriptDir();
const script = dir.script('pool.mjs', POOL_SCRIPT);
const command = `${q(process.execPath)} ${q(script)} ${q(dir.path)}`;
const pools: PoolHelper[] = [];

function pool(options: { size?: number; warm?: number; idleMs?: number; timeoutMs?: number } = {}): PoolHelper {
  const size = options.size ?? 1;
  const p = new PoolHelper({
    command,
    size,
    warm: options.warm ?? size,
    idleMs: options.idleMs,
    timeoutMs: options.timeoutMs ?? 3000,
    closeGraceMs: 500,
  });
  pools.push(p);
  return p;
}

async function run(p: PoolHelper, identity: string, signal?: AbortSignal) {
  return p.run(sampleRequest(identity), { identity, signal });
}

async function failure(p: PoolHelper, identity: string, signal?: AbortSignal): Promise<HelperError> {
  try {
    await run(p, identity, signal);
  } catch (err) {
    if (err instanceof HelperError) return err;
    throw err;
  }
  throw new Error(`expected ${identity} to fail`);
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
afterAll(() => dir.remove());

describe('PoolHelper', () => {
  it('answers many concurrent requests on 2 processes, each with its own reply', async () => {
    const p = pool({ size: 2 });
    const ids = Array.from({ length: 24 }, (_, i) => `node-${i}`);
    const results = await Promise.all(ids.map((id) => run(p, id)));
    expect(results.map((r) => r.reply.configuration?.['identity'])).toEqual(ids);
    const servedBy = new Set(results.map((r) => r.reply.msg));
    expect(servedBy.size).toBeGreaterThanOrEqual(1);
    expect(servedBy.size).toBeLessThanOrEqual(2);
    expect(p.pids).toHaveLength(servedBy.size);
  });

  it('starts processes on demand, or all of them at once with warmUp(), and serves requests with the warm ones', async () => {
    const lazy = pool({ size: 2 });
    expect(lazy.pids).toEqual([]);
    const warm = pool({ size: 2 });
    warm.warmUp();
    const started = warm.pids;
    expect(started).toHaveLength(2);
    warm.warmUp(); // no more than the size
    expect(warm.pids).toEqual(started);
    const results = await Promise.all(['a', 'b', 'c'].map((id) => run(warm, id)));
    expect(results.map((r) => r.reply.configuration?.['identity'])).toEqual(['a', 'b', 'c']);
    expect(warm.pids.sort()).toEqual([...started].sort());
  });

  it('grows past its warm processes while every one is busy, up to its size, and lets the extra ones finish when idle', async () => {
    const p = pool({ size: 4, warm: 1, idleMs: 300 });
    p.warmUp();
    const [kept] = p.pids;
    expect(p.pids).toHaveLength(1);
    // four helpers that wait 200 ms each: four runs in flight, one per process
    const results = await Promise.all(['wait-1', 'wait-2', 'wait-3', 'wait-4'].map((id) => run(p, id)));
    expect(new Set(results.map((r) => r.reply.msg)).size).toBe(4);
    const grown = p.pids;
    expect(grown).toHaveLength(4);
    await until('the burst processes finished', () => p.pids.length === 1, 5_000);
    expect(p.pids).toEqual([kept]);
    await Promise.all(
      grown.filter((pid) => pid !== kept).map((pid) => until(`process ${pid} exited`, () => !isAlive(pid), 5_000)),
    );
    // the pool still serves, and grows again on the next burst
    const again = await Promise.all(['wait-5', 'wait-6'].map((id) => run(p, id)));
    expect(new Set(again.map((r) => r.reply.msg)).size).toBe(2);
  });

  it('keeps the warm process while a newer one is still busy', async () => {
    const p = pool({ size: 3, warm: 1, idleMs: 200 });
    p.warmUp();
    const [kept] = p.pids;
    // the warm process and a second one are idle long before the third answers
    const results = await Promise.all(['wait-1', 'wait-2', 'long-3'].map((id) => run(p, id)));
    expect(new Set(results.map((r) => r.reply.msg)).size).toBe(3);
    await until('the burst processes finished', () => p.pids.length === 1, 5_000);
    expect(p.pids).toEqual([kept]);
  });

  it('keeps its warm processes however long they sit idle', async () => {
    const p = pool({ size: 3, warm: 2, idleMs: 50 });
    p.warmUp();
    const started = p.pids;
    await run(p, 'a');
    await new Promise((r) => setTimeout(r, 300));
    expect(p.pids.sort()).toEqual([...started].sort());
  });

  it('refuses a warm count above its size', () => {
    expect(() => new PoolHelper({ command, size: 2, warm: 3 })).toThrow(
      /warm count must be an integer from 1 to the pool size 2, got 3/,
    );
  });

  it('replaces a process that dies mid-request; the next request works', async () => {
    const p = pool();
    const first = await run(p, 'ok-1');
    const err = await failure(p, 'die-now');
    expect(err.kind).toBe('exit');
    expect(err.exitCode).toBe(3);
    expect(err.message).toContain(
      `helper ${process.execPath} failed for die-now: exited with status 3 before answering`,
    );
    const next = await run(p, 'ok-2');
    expect(next.reply.configuration?.['identity']).toBe('ok-2');
    expect(next.reply.msg).not.toBe(first.reply.msg);
    await becomesDead(Number(first.reply.msg));
  });

  it('kills a process (and its child) that times out, and replaces it', async () => {
    const p = pool({ timeoutMs: 1500 });
    const first = await run(p, 'ok-1');
    const err = await failure(p, 'hang-pool');
    expect(err.kind).toBe('timeout');
    expect(err.message).toContain('timed out after 1500 ms without answering');
    const child = await readPid(dir.file('hang-pool.pid'));
    await until('the helper and its child to exit', () => !isAlive(child) && !isAlive(Number(first.reply.msg)), 2000);
    expect((await run(p, 'ok-2')).reply.configuration?.['identity']).toBe('ok-2');
  });

  it('replaces a process that prints junk, but keeps one that sends an invalid reply', async () => {
    const p = pool();
    const a = await run(p, 'ok-1');
    const junk = await failure(p, 'junk');
    expect(junk.kind).toBe('invalid-json');
    expect(junk.message).toContain('stdout: "not json at all"');
    expect(junk.publicMessage).toContain(
      'failed for junk: stdout is not valid JSON: 15 bytes that are not JSON: a JSON value expected at position 0 (pool helpers print each reply as one line of JSON); killed it; it printed 15 bytes on stdout',
    );
    expect(junk.publicMessage).not.toContain('not json at all');
    const b = await run(p, 'ok-2');
    expect(b.reply.msg).not.toBe(a.reply.msg);
    const bad = await failure(p, 'bad');
    expect(bad.kind).toBe('invalid-reply');
    expect(bad.message).toContain('configuration["port"] must be a string, got number 1');
    expect(bad.publicMessage).toContain('configuration["port"] must be a string, got a number');
    expect((await run(p, 'ok-3')).reply.msg).toBe(b.reply.msg);
  });

  it('reads an answer that came within the limit while this process was blocked past it, instead of calling it a timeout', async () => {
    const p = pool({ timeoutMs: 500 });
    await run(p, 'ok-0');
    // the answer comes after 200 ms; the request is on its way once the write is flushed
    const answer = run(p, 'wait-1');
    await sleep(50);
    // the limit is due before the answer waiting in the pipe is read
    await blockEventLoopFromCheckPhase(1500);
    expect((await answer).reply.configuration?.['identity']).toBe('wait-1');
  });

  it('returns the stderr written while serving each request', async () => {
    const p = pool();
    expect((await run(p, 'stderr-1')).stderr).toBe('about stderr-1\n');
    expect((await run(p, 'ok-1')).stderr).toBe('');
  });

  it('drops a queued request when its signal aborts', async () => {
    const p = pool({ timeoutMs: 5000 });
    const busy = failure(p, 'hang-queue');
    const controller = new AbortController();
    const queued = failure(p, 'ok-queued', controller.signal);
    setTimeout(() => controller.abort(), 50);
    const err = await queued;
    expect(err.kind).toBe('aborted');
    expect(err.message).toContain('while waiting for a free helper process');
    await readPid(dir.file('hang-queue.pid'));
    await p.close();
    expect((await busy).kind).toBe('aborted');
  });

  it('close() ends stdin, kills stragglers and refuses new requests', async () => {
    const p = pool({ size: 2 });
    await Promise.all([run(p, 'ok-1'), run(p, 'ok-2')]);
    const pids = p.pids;
    expect(pids.length).toBeGreaterThan(0);
    await p.close();
    await until('every pool process to exit', () => pids.every((pid) => !isAlive(pid)), 2000);
    expect(p.pids).toEqual([]);
    const err = await failure(p, 'ok-3');
    expect(err.kind).toBe('aborted');
    expect(err.message).toContain('the helper pool is closed');
  });

  it('close() ends within its bounds and leaves no process, even of a helper that ignores EOF and SIGTERM and never answers', async () => {
    const stubborn = dir.script(
      'stubborn.mjs',
      `import { writeFileSync } from 'node:fs';\nprocess.on('SIGTERM', () => undefined);\nprocess.stdin.on('data', () => undefined);\nprocess.stdin.on('end', () => undefined);\nsetInterval(() => undefined, 60_000);\nwriteFileSync(process.argv[2] + '/stubborn-' + process.pid, '');\n`,
    );
    const p = new PoolHelper({
      command: `${q(process.execPath)} ${q(stubborn)} ${q(dir.path)}`,
      size: 2,
      warm: 2,
      timeoutMs: 30_000,
      closeGraceMs: 300,
    });
    pools.push(p);
    p.warmUp();
    const pids = p.pids;
    expect(pids).toHaveLength(2);
    const busy = failure(p, 'stuck-1');
    // both have set their handlers (a SIGTERM now reaches the handler, not the default action)
    await until('both helpers ready', () => pids.every((pid) => existsSync(join(dir.path, `stubborn-${pid}`))), 10_000);
    for (const pid of pids) process.kill(pid, 'SIGTERM');
    const t = Date.now();
    await p.close();
    // the grace, then SIGKILL and the (bounded) wait for the exit
    expect(Date.now() - t).toBeLessThan(300 + 2000);
    expect((await busy).kind).toBe('aborted');
    for (const pid of pids) await becomesDead(pid);
  });

  it('reports a pool command that cannot start', async () => {
    const p = new PoolHelper({ command: dir.file('missing'), size: 1, timeoutMs: 1000 });
    pools.push(p);
    const err = await failure(p, 'n1');
    expect(err.kind).toBe('spawn');
    expect(err.message).toContain('ENOENT');
  });
});

// A helper that answers strictly one request after the other, in order; with BATCH=n it waits
// until it has read n requests before answering the first (which only works when the pool writes
// them without waiting for replies), and DELAY_MS is how long each answer takes.
const ORDERED_SCRIPT = `
import { createInterface } from 'node:readline';
const batch = Number(process.env.BATCH ?? 1);
const delay = Number(process.env.DELAY_MS ?? 0);
const waiting = [];
let seen = 0;
let busy = false;
function pump() {
  if (busy || waiting.length === 0 || seen < batch) return;
  busy = true;
  const id = JSON.parse(waiting.shift()).identity;
  if (id.startsWith('die')) process.exit(3);
  setTimeout(() => {
    process.stdout.write(JSON.stringify({ msg: process.pid + ' ' + id, configuration: { identity: id } }) + '\\n');
    busy = false;
    pump();
  }, delay);
}
createInterface({ input: process.stdin }).on('line', (line) => {
  waiting.push(line);
  seen++;
  pump();
});
`;
const ordered = dir.script('ordered.mjs', ORDERED_SCRIPT);

function depthPool(
  depth: number,
  env: Record<string, string>,
  options: { size?: number; timeoutMs?: number } = {},
): PoolHelper {
  const p = new PoolHelper({
    command: `${q(process.execPath)} ${q(ordered)}`,
    size: options.size ?? 1,
    depth,
    timeoutMs: options.timeoutMs ?? 3000,
    closeGraceMs: 500,
    env: { ...process.env, ...env },
  });
  pools.push(p);
  return p;
}

describe('PoolHelper with several requests in flight per process (depth)', () => {
  it('writes up to depth requests before the first reply and matches the replies in order', async () => {
    const p = depthPool(3, { BATCH: '3' });
    const ids = ['a1', 'a2', 'a3', 'a4', 'a5'];
    const results = await Promise.all(ids.map((id) => run(p, id)));
    expect(results.map((r) => r.reply.configuration?.['identity'])).toEqual(ids);
    // one process served them all
    expect(new Set(results.map((r) => r.reply.msg?.split(' ')[0])).size).toBe(1);
  });

  it('at depth 1 the next request waits for the reply (so a helper that reads ahead never answers)', async () => {
    const p = depthPool(1, { BATCH: '2' }, { timeoutMs: 500 });
    const settled = await Promise.allSettled([run(p, 'b1'), run(p, 'b2')]);
    // each process got one request and waited for a second that never came
    expect(settled.map((r) => (r.status === 'rejected' ? (r.reason as HelperError).kind : 'answered'))).toEqual([
      'timeout',
      'timeout',
    ]);
  });

  it('counts the time limit from when the helper starts on a request, not from when it was written', async () => {
    // three answers of 600 ms take longer than the limit together, each well within it; the
    // process is started first, so a slow start on a loaded machine is not part of any answer's time
    const p = depthPool(3, { DELAY_MS: '600' }, { timeoutMs: 1500 });
    await run(p, 'c0');
    const results = await Promise.all(['c1', 'c2', 'c3'].map((id) => run(p, id)));
    expect(results.map((r) => r.reply.configuration?.['identity'])).toEqual(['c1', 'c2', 'c3']);
  });

  it('fails a request given up while it waited behind others at once, and gives the next its own reply', async () => {
    const p = depthPool(3, { DELAY_MS: '100' });
    const abort = new AbortController();
    const first = run(p, 'd1');
    const second = failure(p, 'd2', abort.signal);
    const third = run(p, 'd3');
    abort.abort();
    expect((await second).message).toMatch(/aborted by the caller while it waited behind other requests/);
    expect((await first).reply.configuration?.['identity']).toBe('d1');
    expect((await third).reply.configuration?.['identity']).toBe('d3');
  });

  it('when a process dies, the request it worked on fails and the ones written after it go to a new process', async () => {
    const p = depthPool(3, { DELAY_MS: '50' });
    const [dying, after1, after2] = await Promise.allSettled([run(p, 'die1'), run(p, 'e2'), run(p, 'e3')]);
    expect(dying.status).toBe('rejected');
    expect((dying as PromiseRejectedResult).reason).toMatchObject({ kind: 'exit' });
    expect(after1.status === 'fulfilled' && after1.value.reply.configuration?.['identity']).toBe('e2');
    expect(after2.status === 'fulfilled' && after2.value.reply.configuration?.['identity']).toBe('e3');
  });

  it('spreads requests over the pool before stacking them on one process', async () => {
    const p = depthPool(4, { DELAY_MS: '100' }, { size: 2 });
    const results = await Promise.all(['f1', 'f2', 'f3', 'f4'].map((id) => run(p, id)));
    expect(new Set(results.map((r) => r.reply.msg?.split(' ')[0])).size).toBe(2);
  });

  it('refuses a depth below 1', () => {
    expect(() => new PoolHelper({ command: 'x', depth: 0 })).toThrow(
      'helper pool depth must be a positive integer, got 0',
    );
  });
});
