import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { blockEventLoopFromCheckPhase } from '@choria-provisioner/test-support/event-loop';
import { sleep } from '@choria-provisioner/test-support/wait';
import { HelperError } from '../../../src/host/helper/errors.js';
import { FunctionHelper } from '../../../src/host/helper/function-helper.js';
import type { HelperFunction } from '../../../src/host/helper/types.js';
import { sampleRequest, TOKEN } from './support.js';

async function failure(helper: FunctionHelper, signal?: AbortSignal): Promise<HelperError> {
  try {
    await helper.run(sampleRequest(), { identity: 'web1.example.net', signal });
  } catch (err) {
    if (err instanceof HelperError) return err;
    throw err;
  }
  throw new Error('expected the run to fail');
}

describe('FunctionHelper', () => {
  it('returns the validated reply of an async function and hands it the request', async () => {
    const seen: string[] = [];
    const fn: HelperFunction = async (req) => {
      seen.push(req.identity, JSON.parse(req.inventory).version);
      return {
        msg: 'ok',
        configuration: { identity: req.identity, 'plugin.choria.server.provision': 'false' },
        extra: 1,
      };
    };
    const result = await new FunctionHelper(fn).run(sampleRequest(), { identity: 'web1.example.net' });
    expect(seen).toEqual(['web1.example.net', '0.29.4']);
    expect(result.reply).toEqual({
      msg: 'ok',
      configuration: { identity: 'web1.example.net', 'plugin.choria.server.provision': 'false' },
    });
    expect(result.stderr).toBe('');
  });

  it('enforces the same types as helper stdout', async () => {
    const err = await failure(
      new FunctionHelper(function siteHelper() {
        return { configuration: { port: 8080 } };
      }),
    );
    expect(err.kind).toBe('invalid-reply');
    expect(err.message).toBe(
      'helper function siteHelper failed for web1.example.net: reply is invalid: configuration["port"] must be a string, got number 8080; returned: "{\\"configuration\\":{\\"port\\":8080}}"',
    );
  });

  it('rejects non-object and unserialisable return values', async () => {
    expect((await failure(new FunctionHelper(() => undefined))).kind).toBe('empty');
    expect((await failure(new FunctionHelper(() => 'configuration=x'))).kind).toBe('invalid-reply');
    expect((await failure(new FunctionHelper(() => ({ n: 1n })))).message).toContain('cannot be serialised to JSON');
  });

  it('times out and aborts the signal it gave the function', async () => {
    let signal: AbortSignal | undefined;
    const helper = new FunctionHelper(
      (_req, ctx) => {
        signal = ctx.signal;
        return new Promise(() => undefined);
      },
      { timeoutMs: 300, name: 'slow' },
    );
    const started = Date.now();
    const err = await failure(helper);
    expect(err.kind).toBe('timeout');
    expect(err.message).toBe('helper function slow failed for web1.example.net: timed out after 300 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(signal?.aborted).toBe(true);
  });

  it('takes the answer of a function whose I/O came in within the limit while this process was blocked past it', async () => {
    // the function waits for a line from another process, printed after 100 ms
    const helper = new FunctionHelper(
      () =>
        new Promise((resolve, reject) => {
          const child = spawn('sh', ['-c', 'sleep 0.1; echo in-time; exec sleep 30'], {
            stdio: ['ignore', 'pipe', 'ignore'],
          });
          child.on('error', reject);
          child.stdout.once('data', (chunk: Buffer) => {
            child.kill('SIGKILL');
            resolve({ msg: chunk.toString().trim() });
          });
        }),
      { timeoutMs: 500 },
    );
    const answer = helper.run(sampleRequest(), { identity: 'web1.example.net' });
    await sleep(30);
    // the limit is due before the line waiting in the pipe is read
    await blockEventLoopFromCheckPhase(1500);
    expect((await answer).reply.msg).toBe('in-time');
  });

  it('reports a function that throws, without leaking the token', async () => {
    const err = await failure(
      new FunctionHelper((req) => {
        throw new Error(`CA refused token ${String(req.jwt?.cht)}`);
      }),
    );
    expect(err.kind).toBe('threw');
    expect(err.message).toContain('threw CA refused token [redacted]');
    expect(err.message).not.toContain(TOKEN);
    // the monitor's text says what was thrown, not what it said
    expect(err.publicMessage).toBe(
      'helper function anonymous failed for web1.example.net: threw an error (Error); what it said is in the log at debug level',
    );
  });

  it('honours the caller AbortSignal and close()', async () => {
    const never = new FunctionHelper(() => new Promise(() => undefined), { timeoutMs: 5000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect((await failure(never, controller.signal)).kind).toBe('aborted');
    const pending = failure(never);
    await never.close();
    expect((await pending).message).toContain('the helper runner was closed');
    expect((await failure(never)).message).toContain('the helper runner is closed');
  });
});
