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
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import winston from 'winston';
import type { HelperRequest } from '@choria-provisioner/core';
import { startTcpRelay } from '@choria-provisioner/test-support/tcp-relay';
import { FleetHarness, expectProvisionedOnce, plainConfiguration } from '@choria-provisioner/test-support/fleet';
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
    writeFileSync(
      choria,
      `identity = provisioner.example.net\nplugin.choria.middleware_hosts = ${s.url}\nplugin.security.provider = file\n`,
    );
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
      const child = spawn(process.execPath, [CLI, 'run', '--monitor-address', '127.0.0.1', '--config', config], {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
        env,
      });
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
    await until(
      'a leader running 8 helpers',
      async () => ((await status(a))?.hosts ?? []).filter((x) => x.step === 'helper').length >= 8,
      30_000,
      { stepMs: 50 },
    ).catch(async (err: unknown) => {
      throw new Error(
        `${String(err)}; a's status: ${JSON.stringify(await status(a)).slice(0, 3000)}\n${readFileSync(a.log, 'utf8').slice(-3000)}`,
      );
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

  it('an active/active member whose path goes silent past its lease: the nodes it let go are looked for again as soon as it may act, not at the next interval', async () => {
    // Alone in its group, so nobody takes its share over: when its lease runs out the attempts in
    // flight end cancelled and the queued nodes are let go, and the interval's next discovery is 10
    // minutes away. The member looks for them as soon as its lease holds again (here the replaced
    // connection's own rediscovery would find them 5 s later too; after a pause of the process,
    // where the connection survives, nothing else would).
    const s = await h.broker({ choriaAccounts: false });
    const relay = await startTcpRelay(s.url);
    h.onCleanup(() => relay.close());
    const fleet = await h.fleet(s.url, { count: 12 });
    await fleet.waitForBooted(10_000);
    const entries: { level: string; message: string }[] = [];
    const sink = new Writable({
      objectMode: true,
      write(info: { level: string; message: string }, _enc, done) {
        entries.push(info);
        done();
      },
    });
    const logger = winston.createLogger({
      level: 'info',
      transports: [new winston.transports.Stream({ stream: sink })],
    });
    let helperRuns = 0;
    const slowHelper = async (req: HelperRequest): Promise<{ configuration: Record<string, string> }> => {
      helperRuns++;
      await sleep(3_000);
      return { configuration: plainConfiguration(req) };
    };
    // heartbeat 1 s: the lease ends 2.5 s after the last heartbeat the member heard back
    const p = h.provisioner(
      relay.url,
      'coordination: active_active\ncoordination_heartbeat: 1s\nworkers: 4\ninterval: 10m\n',
      { helper: slowHelper, logger },
    );
    await p.start();
    await until('4 helpers running', () => helperRuns >= 4, 20_000, { stepMs: 20 });
    relay.goSilent();
    await until('every node provisioned', () => fleet.countByState().provisioned === 12, 40_000, { stepMs: 100 }).catch(
      (err: unknown) => {
        throw new Error(
          `${String(err)}\n${entries
            .map((e) => e.message)
            .join('\n')
            .slice(-4000)}`,
        );
      },
    );
    const text = entries.map((e) => e.message).join('\n');
    // the silence did cut work short, and the discovery after it found the nodes again
    expect(text).toMatch(/lease ran out/);
    expect(text).toContain('discovering the nodes it let go');
    // Each node restarted once and never configured after its restart. The watch of a reply lost on
    // the silent path asks `jwt` (read only: an idle agent answers at once), which this plain
    // fleet, with no provisioning JWT, refuses; and checks a configure lost there with a restart.
    const r = fleet.report();
    const mistakes = r.nodes.flatMap((n) =>
      n.violations
        .filter(
          (v) => v.kind !== 'restart-refused' && !(v.kind === 'refused' && /No Provisioning JWT file/.test(v.detail)),
        )
        .map((v) => `${n.identity} ${v.kind}: ${v.detail}`),
    );
    expect(mistakes).toEqual([]);
    expect(r.nodes.filter((n) => n.state !== 'provisioned' || n.restartCount !== 1).map((n) => n.identity)).toEqual([]);
  }, 90_000);
});
