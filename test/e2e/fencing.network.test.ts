// Fencing against a paused process. Two `choria-provisioner run` processes share one election and
// one client identity (the usual deployment: the node lock cannot tell them apart), pki flow, a
// helper that takes seconds. The leader is stopped with SIGSTOP while its helpers run and continued
// three election TTLs later, when the standby has long taken over and made every node a new key
// (go-choria, and the simulator, make a new private key at every gencsr). Whatever the resumed
// process decided before its pause, it must not send it: a configure with the certificate for the
// old key leaves a server that can never start again (the simulator's `key-mismatch`).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetHarness, expectProvisionedOnce } from '@choria-provisioner/test-support/fleet';
import { CHORIA_BROKER_LOGINS, freePort } from '@choria-provisioner/test-support/nats-server';
import { repoRoot } from '@choria-provisioner/test-support/vectors';
import { sleep, until } from '@choria-provisioner/test-support/wait';

const h = new FleetHarness();
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
  await h.cleanup();
});

const CLI = join(repoRoot, 'packages', 'cli', 'dist', 'bin.js');
const SLOW_HELPER = join(repoRoot, 'test', 'e2e', 'fixtures', 'slow-csr-helper.mjs');

interface Instance {
  readonly name: string;
  readonly child: ChildProcess;
  readonly port: number;
  readonly log: string;
  output(): string;
}

interface SiteStatus {
  leader?: boolean;
  hosts?: { identity: string; state: string; step?: string }[];
}

async function status(i: Instance): Promise<SiteStatus | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${i.port}/status`);
    const body = (await res.json()) as { sites?: SiteStatus[] } & SiteStatus;
    return body.sites?.[0] ?? body;
  } catch {
    return undefined;
  }
}

describe('fencing: a paused provisioner never sends what it decided before the pause', () => {
  it('pki, leader paused for three election TTLs while its helpers run: no certificate for a replaced key, nothing configured twice', async () => {
    const s = await h.electionBroker(); // election bucket TTL 5 s
    const fleet = await h.fleet(s.url, { count: 16 });
    await fleet.waitForBooted(10_000);
    const dir = h.tempDir();
    const choria = join(dir, 'client.cfg');
    // one identity for both instances, as with one client certificate
    writeFileSync(choria, `identity = provisioner.example.net\nplugin.choria.middleware_hosts = ${s.url}\nplugin.security.provider = file\n`);
    const start = async (name: string): Promise<Instance> => {
      const port = await freePort();
      const log = join(dir, `${name}.log`);
      const config = join(dir, `${name}.yaml`);
      writeFileSync(
        config,
        [
          'site: fencing',
          'leader_election: true',
          'workers: 8',
          'interval: 1m',
          'token: s3cret',
          'choria_insecure: true',
          `broker_provisioning_password: ${CHORIA_BROKER_LOGINS.provisioner.password}`,
          `choria_config: ${choria}`,
          `helper: ${SLOW_HELPER}`,
          'features:',
          '  pki: true',
          `monitor_port: ${port}`,
          `logfile: ${log}`,
          'loglevel: debug',
          '',
        ].join('\n'),
      );
      let out = '';
      const env = { ...process.env, CA_DIR: join(dir, 'ca'), SLOW_HELPER_MS: '3000' };
      const child = spawn(process.execPath, [CLI, 'run', '--monitor-address', '127.0.0.1', '--config', config], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], env });
      children.push(child);
      child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
      return { name, child, port, log, output: () => out };
    };

    const a = await start('a');
    await until('instance a to lead', async () => (await status(a))?.leader === true, 30_000);
    const b = await start('b');
    await until('instance b to stand by', async () => (await status(b))?.leader === false, 30_000);
    // the leader is paused with 8 helpers running, each on a node whose key it made (gencsr)
    await until('a leader running 8 helpers', async () => ((await status(a))?.hosts ?? []).filter((x) => x.step === 'helper').length >= 8, 30_000, { stepMs: 50 }).catch(async (err: unknown) => {
      throw new Error(`${String(err)}; a's status: ${JSON.stringify(await status(a)).slice(0, 3000)}\n${readFileSync(a.log, 'utf8').slice(-3000)}`);
    });
    process.kill(a.child.pid ?? -1, 'SIGSTOP');
    await until('the standby to take over', async () => (await status(b))?.leader === true, 30_000);
    await sleep(15_000 - 0); // three TTLs in all, the standby working meanwhile
    process.kill(a.child.pid ?? -1, 'SIGCONT');

    await until('every node provisioned', () => fleet.countByState().provisioned === 16, 90_000, { stepMs: 200 });
    // let anything the resumed process still had in hand reach the nodes
    await sleep(3_000);
    const byKind = fleet.report().totals.violationsByKind;
    expect(byKind['key-mismatch'] ?? 0, JSON.stringify(byKind)).toBe(0);
    expectProvisionedOnce(fleet);
  }, 180_000);
});
