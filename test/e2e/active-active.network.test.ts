// Active/active: several `choria-provisioner run` processes of one site share a simulated fleet.
// Their helper is I/O bound (a 200 ms wait per node), so how fast the fleet is done depends on how
// many instances share it, not on the machine's load. Every helper run is recorded per instance, so
// the tests can count runs per node; the simulator counts configure actions per node and records
// who holds each node's provisioning lock.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { SimulatedFleet, type FleetOptions } from '../../packages/simulator/src/index.js';
import {
  CHORIA_BROKER_LOGINS,
  freePort,
  startNatsServer,
  type RunningNatsServer,
} from '@choria-provisioner/test-support/nats-server';
import { until } from '@choria-provisioner/test-support/wait';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const CLI = join(repoRoot, 'packages', 'cli', 'dist', 'bin.js');
const HELPER = join(repoRoot, 'test', 'e2e', 'fixtures', 'sleepy-pool-helper.mjs');
const EXAMPLE = join(repoRoot, 'examples', 'config', 'provisioner-active-active.yaml');
const NODES = 600;
const WORKERS = 4;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

interface Instance {
  readonly name: string;
  readonly child: ChildProcess;
  readonly monitor: number;
  output(): string;
  readonly exited: Promise<number | null>;
}

interface InstanceSpec {
  coordination?: 'active_active' | 'none';
  /** the Choria identity (default `<name>.example.net`): replicas of one deployment share one */
  identity?: string;
  delayMs?: number;
  /** keys set over the example's */
  yaml?: Record<string, unknown>;
}

class Site {
  readonly dir = mkdtempSync(join(tmpdir(), 'cpts-aa-'));
  readonly runs = join(this.dir, 'helper-runs.txt');
  readonly instances: Instance[] = [];
  private constructor(
    readonly broker: RunningNatsServer,
    readonly fleet: SimulatedFleet,
  ) {}

  static async start(fleet: Partial<FleetOptions> = {}, brokerConfig?: string): Promise<Site> {
    // the Choria Broker's account layout unless the test brings its own authorization
    const broker = await startNatsServer(
      brokerConfig !== undefined ? { jetstream: false, config: brokerConfig } : { choriaAccounts: true },
    );
    cleanups.push(() => broker.stop());
    const login = broker.choriaAccounts
      ? { user: CHORIA_BROKER_LOGINS.node.user, password: CHORIA_BROKER_LOGINS.node.password }
      : {};
    const f = await SimulatedFleet.start({
      servers: [broker.url],
      count: NODES,
      token: 's3cret',
      timeScale: 0.01,
      control: false,
      name: 'aa',
      ...login,
      ...fleet,
    });
    cleanups.push(() => f.stop());
    const site = new Site(broker, f);
    cleanups.push(async () => rmSync(site.dir, { recursive: true, force: true }));
    return site;
  }

  async instance(name: string, spec: InstanceSpec = {}): Promise<Instance> {
    const monitor = await freePort();
    const choria = join(this.dir, `${name}.cfg`);
    writeFileSync(
      choria,
      `identity = ${spec.identity ?? `${name}.example.net`}\nplugin.choria.middleware_hosts = ${this.broker.url}\nplugin.security.provider = file\n`,
    );
    const config = join(this.dir, `${name}.yaml`);
    // the documented example, with what a test on one machine must change
    const example = parseYaml(readFileSync(EXAMPLE, 'utf8')) as Record<string, unknown>;
    delete example['broker_provisioning_password'];
    if (this.broker.choriaAccounts) example['broker_provisioning_password'] = CHORIA_BROKER_LOGINS.provisioner.password;
    const yaml = {
      ...example,
      site: 'lon',
      workers: WORKERS,
      token: 's3cret',
      choria_insecure: true,
      choria_config: choria,
      helper: `${process.execPath} ${HELPER} --delay-ms ${spec.delayMs ?? 200} --log ${this.runs} --instance ${name}`,
      helper_pool_size: 1,
      helper_pool_depth: WORKERS,
      coordination: spec.coordination ?? example['coordination'],
      coordination_heartbeat: '250ms',
      coordination_lock_retry: '3s',
      monitor_port: monitor,
      logfile: join(this.dir, `${name}.log`),
      ...spec.yaml,
    };
    writeFileSync(config, stringifyYaml(yaml));
    let out = '';
    const child = spawn(process.execPath, [CLI, 'run', '--config', config, '--monitor-address', '127.0.0.1'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    });
    const logfile = join(this.dir, `${name}.log`);
    const inst: Instance = {
      name,
      child,
      monitor,
      output: () => `${out}${existsSync(logfile) ? readFileSync(logfile, 'utf8') : ''}`,
      exited,
    };
    this.instances.push(inst);
    return inst;
  }

  /** helper runs recorded by the sleepy helper: instance -> identities */
  helperRuns(): {
    perNode: Map<string, number>;
    perInstance: Map<string, number>;
    byInstance: Map<string, string[]>;
    total: number;
  } {
    const perNode = new Map<string, number>();
    const perInstance = new Map<string, number>();
    const byInstance = new Map<string, string[]>();
    const lines = existsSync(this.runs)
      ? readFileSync(this.runs, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
      : [];
    for (const line of lines) {
      const [instance, identity] = line.split(' ') as [string, string];
      perNode.set(identity, (perNode.get(identity) ?? 0) + 1);
      perInstance.set(instance, (perInstance.get(instance) ?? 0) + 1);
      byInstance.set(instance, [...(byInstance.get(instance) ?? []), identity]);
    }
    return { perNode, perInstance, byInstance, total: lines.length };
  }

  async allProvisioned(timeoutMs: number): Promise<void> {
    await this.fleet.waitForAllProvisioned(timeoutMs).catch((err: unknown) => {
      throw new Error(
        `${String(err)}\n${this.instances.map((i) => `--- ${i.name}\n${i.output().slice(-3000)}`).join('\n')}`,
      );
    });
  }

  /** every node configured exactly once */
  expectConfiguredOnce(): void {
    const counts = this.fleet.report().nodes.map((n) => n.configuredCount);
    const wrong = this.fleet
      .report()
      .nodes.filter((n) => n.configuredCount !== 1)
      .map((n) => `${n.identity}: ${n.configuredCount}`);
    expect(wrong, 'nodes not configured exactly once').toEqual([]);
    expect(counts).toHaveLength(NODES);
  }

  async status(inst: Instance): Promise<StatusBody> {
    return (await (await fetch(`http://127.0.0.1:${inst.monitor}/status`)).json()) as StatusBody;
  }
}

interface StatusBody {
  sites: {
    coordination: {
      mode: string;
      effective: string;
      instance: string;
      membership?: {
        state: string;
        members: { instance: string; self: boolean; owned: number; provisioned: number }[];
      };
    };
  }[];
}

async function timeToProvision(site: Site, names: string[]): Promise<number> {
  const started = Date.now();
  for (const n of names) await site.instance(n);
  await site.allProvisioned(120_000);
  return Date.now() - started;
}

describe('active/active (CLI processes against a simulated fleet)', () => {
  it('three instances share 600 nodes, each node once, clearly faster than one', async () => {
    expect(existsSync(CLI), 'run `npm run build` first').toBe(true);
    const one = await Site.start();
    const alone = await timeToProvision(one, ['prov-a']);
    one.expectConfiguredOnce();
    await Promise.all(
      cleanups
        .splice(0)
        .reverse()
        .map((c) => c().catch(() => undefined)),
    );

    const three = await Site.start();
    const shared = await timeToProvision(three, ['prov-a', 'prov-b', 'prov-c']);
    three.expectConfiguredOnce();
    const runs = three.helperRuns();
    // every instance did its share, and the helper ran at most 1.05 times per node
    for (const name of ['prov-a', 'prov-b', 'prov-c'])
      expect(runs.perInstance.get(name) ?? 0, name).toBeGreaterThan(NODES / 6);
    expect(runs.total / NODES).toBeLessThanOrEqual(1.05);
    // The speed target (3 vs 1 >= 2.8x on a quiet machine) is the bench's (active-active/1 and /3);
    // here the split must simply pay off, also on a loaded machine (1.8x seen at load 11 on 2 cores).
    expect(alone / shared, `one instance ${alone} ms, three ${shared} ms`).toBeGreaterThanOrEqual(1.5);

    // /status: the member list and who owns how many, as every member sees it
    const status = await three.status(three.instances[0]!);
    const c = status.sites[0]!.coordination;
    expect(c).toMatchObject({ mode: 'active_active', effective: 'active_active', instance: 'prov-a.example.net' });
    expect(c.membership?.state).toBe('formed');
    expect(c.membership?.members.map((m) => m.instance)).toEqual([
      'prov-a.example.net',
      'prov-b.example.net',
      'prov-c.example.net',
    ]);
    await until(
      'every member reports what it finished',
      async () => {
        const s = await three.status(three.instances[0]!);
        const total = s.sites[0]!.coordination.membership!.members.reduce((sum, m) => sum + m.provisioned, 0);
        return total === NODES;
      },
      5000,
    );
    const metrics = await (await fetch(`http://127.0.0.1:${three.instances[1]!.monitor}/metrics`)).text();
    expect(metrics).toContain(
      'choria_provisioner_coordination_mode{site="lon",identity="prov-b.example.net",mode="active_active"} 1',
    );
    expect(metrics).toContain('choria_provisioner_coordination_members{site="lon",identity="prov-b.example.net"} 3');

    const st = spawn(process.execPath, [CLI, 'status', '--url', `http://127.0.0.1:${three.instances[2]!.monitor}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    st.stdout?.on('data', (d: Buffer) => (text += d.toString()));
    await new Promise((r) => st.once('exit', r));
    expect(text).toMatch(/active\/active member of "lon" \(formed, 3 members/);
    expect(text).toMatch(/prov-c\.example\.net \(this\)/);
  }, 240_000);

  it('three instances with one identity started together never configure a node twice (per-node claims)', async () => {
    // replicas of one deployment: one certificate, one identity, started within a second; each
    // forms its group alone for a moment, so only the claim in the shared history keeps them apart
    const site = await Site.start();
    const started = ['prov-a', 'prov-b', 'prov-c'].map((n) => site.instance(n, { identity: 'prov.example.net' }));
    await Promise.all(started);
    await site.allProvisioned(120_000);
    site.expectConfiguredOnce();
    // every instance worked
    const runs = site.helperRuns();
    expect([...runs.perInstance.keys()].sort()).toEqual(['prov-a', 'prov-b', 'prov-c']);
  }, 180_000);

  it('survivors finish the fleet after SIGKILL of one instance; its in-flight nodes once their claim and lock expired', async () => {
    // the lock lasts 20 s here, longer than the survivors need for the rest of the fleet; they
    // try a locked node of theirs again every 3 s
    const site = await Site.start({ lockMs: 20_000 });
    await site.instance('prov-a');
    await site.instance('prov-b');
    // prov-c's helper never answers in time: its workers stay in the helper, holding their nodes' locks
    const c = await site.instance('prov-c', { delayMs: 60_000 });
    const lockedByC = (): string[] =>
      site.fleet.nodes
        .filter((n) => n.state.lock?.owner.startsWith('prov-c.example.net.') === true)
        .map((n) => n.identity);
    await until('prov-c holds locks of its own share', () => lockedByC().length === WORKERS, 30_000);
    // what is tested is taking over from a member the survivors knew: on a loaded machine prov-c can
    // lock its first nodes before a survivor has read its first heartbeat (that survivor would then
    // meet prov-c's locks as a stranger's, without a membership change to log)
    // (a survivor may still be starting: its monitor not listening yet is a "not yet")
    const survivorsKnowC = async (): Promise<boolean> => {
      for (const inst of site.instances.filter((i) => i.name !== 'prov-c')) {
        const status = await site.status(inst).catch(() => undefined);
        const members = status?.sites[0]?.coordination.membership?.members ?? [];
        if (!members.some((m) => m.instance === 'prov-c.example.net')) return false;
      }
      return true;
    };
    await until('both survivors count prov-c as a member', survivorsKnowC, 30_000);
    const inFlight = lockedByC();
    c.child.kill('SIGKILL');
    await c.exited;
    const killedAt = Date.now();
    await site.allProvisioned(120_000);
    // not before the dead instance's locks ran out
    expect(Date.now() - killedAt).toBeGreaterThan(15_000);
    site.expectConfiguredOnce();
    const runs = site.helperRuns();
    // the dead instance's in-flight nodes were finished by one survivor, after their lock expired
    const bySurvivors = [...(runs.byInstance.get('prov-a') ?? []), ...(runs.byInstance.get('prov-b') ?? [])];
    for (const identity of inFlight)
      expect(
        bySurvivors.filter((n) => n === identity),
        identity,
      ).toHaveLength(1);
    // and no survivor ran its helper twice for a node
    expect(new Set(bySurvivors).size).toBe(bySurvivors.length);
    const survivors = site.instances
      .filter((i) => i.name !== 'prov-c')
      .map((i) => i.output())
      .join('\n');
    // (the log file holds JSON lines: quotes in messages are escaped)
    expect(survivors).toMatch(
      /prov-c\.example\.net \(process [0-9a-f]{16}\) of group \\"lon\\" was not heard for \d+ ms, taking over its share/,
    );
    expect(survivors).toMatch(/Took over \d+ nodes after the active\/active membership changed/);
    // the dead member's claims on its in-flight nodes (in the shared history), then their locks
    expect(survivors).toMatch(
      /Waiting for the claim on node-\d+\.example\.net: .* a process that is no longer a member/,
    );
  }, 180_000);

  it('falls back to lock-only when the broker denies the subjects: every node once, no helper run for a node locked elsewhere', async () => {
    // the provisioner user may not use provisioning.coordination.>; the fleet connects without a user
    const broker = [
      'authorization {',
      '  users: [',
      '    { user: provisioner, password: pw, permissions: { publish: { deny: ["provisioning.coordination.>"] }, subscribe: { deny: ["provisioning.coordination.>"] } } }',
      '    { user: fleet, password: fleet }',
      '  ]',
      '}',
      'no_auth_user: fleet',
    ].join('\n');
    const site = await Site.start({}, broker);
    for (const name of ['prov-a', 'prov-b', 'prov-c'])
      await site.instance(name, { delayMs: 20, yaml: { broker_provisioning_password: 'pw' } });
    await site.allProvisioned(120_000);
    site.expectConfiguredOnce();
    // the lock is taken before the helper runs, so no helper ran for a node another instance held
    const runs = site.helperRuns();
    expect(runs.total).toBe(NODES);
    expect([...runs.perNode.values()].every((n) => n === 1)).toBe(true);
    for (const inst of site.instances) {
      // an instance started last may still be forming when the others have finished the fleet
      await until(
        `${inst.name} says it is lock-only`,
        () => /is unavailable, continuing lock-only/.test(inst.output()),
        20_000,
      );
      expect(inst.output().match(/is unavailable, continuing lock-only/g), inst.name).toHaveLength(1);
      const s = await site.status(inst);
      expect(s.sites[0]!.coordination.effective).toBe('lock_only');
    }
  }, 180_000);

  it('shares a fleet with a plain instance standing in for a Go provisioner: they meet at the node lock', async () => {
    const site = await Site.start();
    await site.instance('prov-a');
    await site.instance('prov-go', { coordination: 'none' });
    await site.allProvisioned(120_000);
    site.expectConfiguredOnce();
    const runs = site.helperRuns();
    // the plain instance runs its helper before asking for the lock (configure), as the Go
    // provisioner does; the active/active one asks first, so it never ran one for a node the
    // plain instance held
    const aRuns = runs.byInstance.get('prov-a') ?? [];
    expect(new Set(aRuns).size).toBe(aRuns.length);
    expect(runs.perInstance.get('prov-a') ?? 0).toBeGreaterThan(0);
    expect(runs.perInstance.get('prov-go') ?? 0).toBeGreaterThan(0);
  }, 180_000);
});
