// The shipped example helpers (examples/helpers/) run under the real runners and produce
// replies that pass validation without warnings.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PoolHelper } from '../../../src/host/helper/pool-helper.js';
import { ProcessHelper } from '../../../src/host/helper/process-helper.js';
import { replyWarnings } from '../../../src/host/helper/reply.js';
import type { HelperRunner } from '../../../src/host/helper/types.js';
import { repoRoot } from '@choria-provisioner/test-support/vectors';
import { q, sampleRequest } from './support.js';

const examples = join(repoRoot, 'examples', 'helpers');
const env = { ...process.env, BROKER_URL: 'nats://b1.example.net:4222', HELPER_DENY_PATTERN: '^db-legacy-' };

function commandFor(name: string): string {
  const path = join(examples, name);
  return name.endsWith('.mjs') ? `${q(process.execPath)} ${q(path)}` : q(path);
}

async function withRunner<T>(runner: HelperRunner, body: (r: HelperRunner) => Promise<T>): Promise<T> {
  try {
    return await body(runner);
  } finally {
    await runner.close();
  }
}

const NAMES = ['plain-helper.mjs', 'plain-helper.sh', 'pool-helper.mjs', 'pool-helper.sh', 'policy-helper.mjs'];

describe('example helpers', () => {
  it.each(NAMES)('%s is executable', (name) => {
    expect(statSync(join(examples, name)).mode & 0o111).toBe(0o111);
  });

  it.each(['plain-helper.mjs', 'plain-helper.sh'])('%s configures a node in process mode', async (name) => {
    const result = await withRunner(new ProcessHelper({ command: commandFor(name), env, timeoutMs: 5000 }), (r) =>
      r.run(sampleRequest('web1.example.net'), { identity: 'web1.example.net' }),
    );
    expect(result.reply.defer).not.toBe(true);
    expect(result.reply.configuration).toMatchObject({
      identity: 'web1.example.net',
      'plugin.choria.server.provision': 'false',
      'plugin.choria.middleware_hosts': 'nats://b1.example.net:4222',
    });
    expect(replyWarnings(result.reply)).toEqual([]);
  });

  it('plain-helper.sh defers identities it cannot safely embed', async () => {
    const result = await withRunner(
      new ProcessHelper({ command: commandFor('plain-helper.sh'), env, timeoutMs: 5000 }),
      (r) => r.run(sampleRequest('we"ird'), { identity: 'we"ird' }),
    );
    expect(result.reply).toEqual({ defer: true, msg: 'no usable identity in the request' });
    expect(result.stderr).toContain('unusable identity');
  });

  it.each(['pool-helper.mjs', 'pool-helper.sh'])('%s answers JSON lines in pool mode', async (name) => {
    const ids = ['n1.example.net', 'n2.example.net', 'n3.example.net', 'n4.example.net', 'n5.example.net'];
    const results = await withRunner(
      new PoolHelper({ command: commandFor(name), env, size: 2, timeoutMs: 5000 }),
      (r) => Promise.all(ids.map((id) => r.run(sampleRequest(id), { identity: id }))),
    );
    expect(results.map((res) => res.reply.configuration?.['identity'])).toEqual(ids);
    for (const res of results) {
      expect(res.reply.configuration?.['plugin.choria.middleware_hosts']).toBe('nats://b1.example.net:4222');
      expect(replyWarnings(res.reply)).toEqual([]);
    }
  });

  it('policy-helper.mjs shuts down denied nodes, defers unready ones and configures the rest', async () => {
    const [denied, unready, ready] = await withRunner(
      new ProcessHelper({ command: commandFor('policy-helper.mjs'), env, timeoutMs: 5000 }),
      (r) =>
        Promise.all([
          r.run(sampleRequest('db-legacy-07', { ready: true }), { identity: 'db-legacy-07' }),
          r.run(sampleRequest('web2.example.net', { ready: false }), { identity: 'web2.example.net' }),
          r.run(sampleRequest('web3.example.net', { ready: true }), { identity: 'web3.example.net' }),
        ]),
    );
    expect(denied?.reply.shutdown).toBe(true);
    expect(denied?.reply.msg).toContain('deny pattern');
    expect(unready?.reply.defer).toBe(true);
    expect(unready?.reply.msg).toContain('not ready');
    expect(ready?.reply.defer).toBeUndefined();
    expect(ready?.reply.configuration?.['plugin.choria.server.provision']).toBe('false');
    expect(Object.keys(ready?.reply.action_policies ?? {})).toEqual(['rpcutil.policy', 'choria_provision.policy']);
    // the renewals' identity may send the node back to provisioning, and only that
    expect(ready?.reply.action_policies?.['choria_provision.policy']).toBe(
      'policy default deny\nallow\tchoria=renewals.choria\treprovision\t*\t*\n',
    );
    expect(replyWarnings(ready?.reply ?? {})).toEqual([]);
  });
});
