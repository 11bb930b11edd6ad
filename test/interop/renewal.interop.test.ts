// Credential renewal against real go-choria servers (this project's provisioner only: renewal is
// its own; upstream has none). Servers provisioned with certificates the lab CA signs for a few
// minutes, a provisioning JWT made with --default (so `reprovision` brings them back into
// provisioning mode) and RPC authorization off (so the renewal client may call it). The servers'
// own state is the judge: each one's certificate file is read from its disk, its key matched
// against it, its status file read for provisioning mode and its connection.
import { describe, expect, it } from 'vitest';
import { sleep } from '@choria-provisioner/test-support/wait';
import {
  interopSuite,
  waitProvisioned,
  waitWaiting,
  withLab,
  issuerNetwork,
  type Lab,
  type LabFleet,
  type LabProvisioner,
  type SiteSpec,
} from '@choria-provisioner/test-support/lab/index';
import { wholeNumberSetting } from '@choria-provisioner/test-support/lab/env';
import {
  RENEWER,
  connectedSince,
  inProvisioning,
  renewerConfig,
  serverCert,
  serverCredential,
  type Flow,
} from '@choria-provisioner/test-support/lab/judge';

const { available, kinds } = interopSuite();
const VALIDITY_MS = 4 * 60_000;
const CONCURRENCY = 8;

/** LAB_RENEWAL_SERVERS (default 40): servers of the renewal rows. */
const servers = (): number => wholeNumberSetting('LAB_RENEWAL_SERVERS', 40, 60);

interface RenewalRun {
  /** per server: renewed before its first certificate expired, with a key that matches */
  readonly late: string[];
  readonly notRenewed: string[];
  readonly keyMismatch: string[];
  readonly mostInProvisioning: number;
  readonly notConnected: string[];
}

/** Watches every server until each holds a certificate later than its first (or the first ones expired). */
async function watchRenewals(flow: Flow, fleet: LabFleet, first: ReadonlyMap<string, number>): Promise<RenewalRun> {
  const renewedAt = new Map<string, number>();
  const keyMismatch = new Set<string>();
  let most = 0;
  const deadline = Math.max(...first.values()) + 20_000;
  while (renewedAt.size < fleet.identities.length && Date.now() < deadline) {
    let out = 0;
    for (const id of fleet.identities) {
      if (inProvisioning(fleet, id)) out++;
      if (renewedAt.has(id)) continue;
      const cert = serverCredential(flow, fleet, id);
      if (cert === undefined || cert.notAfter <= (first.get(id) ?? Infinity)) continue;
      renewedAt.set(id, Date.now());
      if (!cert.matchesKey) keyMismatch.add(id);
    }
    most = Math.max(most, out);
    await sleep(250);
  }
  // every server back on the fleet's broker with its new certificate
  const settle = Date.now() + 30_000;
  const connected = (id: string): boolean => connectedSince(fleet, id, (renewedAt.get(id) ?? Infinity) + 1_000);
  while (fleet.identities.some((id) => !connected(id)) && Date.now() < settle) await sleep(500);
  return {
    late: [...renewedAt].filter(([id, at]) => at >= (first.get(id) ?? 0)).map(([id]) => id),
    notRenewed: fleet.identities.filter((id) => !renewedAt.has(id)),
    keyMismatch: [...keyMismatch],
    mostInProvisioning: most,
    notConnected: fleet.identities.filter((id) => !connected(id)),
  };
}

interface Sent {
  /** per server: how often it was sent `reprovision` (answered or refused), from the provisioners' logs */
  readonly times: Map<string, number>;
  /** all of them together */
  readonly total: number;
  /** servers sent `reprovision` more than once for the same credentials (one round renews them once) */
  readonly twice: string[];
  /** servers sent `reprovision` again for credentials of a renewal (they came due again in the row) */
  readonly again: string[];
  /** the renewal failures the provisioners logged (refused, not back in time, ...) */
  readonly failures: string[];
}

function reprovisionsSent(provisioners: readonly LabProvisioner[], ids: readonly string[]): Sent {
  const logs = provisioners.map((p) => p.log()).join('\n');
  const count = (text: string): number => logs.split(text).length - 1;
  const times = new Map(
    ids.map((id) => [id, count(`Sent reprovision to ${id}`) + count(`Renewal of ${id} failed: refused reprovision`)]),
  );
  // a renewed server's new credentials come due again in a long row: that is a renewal of its own
  const renewals = [...logs.matchAll(/Sent reprovision to (\S+): its credentials expire at (\S+)/g)].map(
    (m) => `${m[1] ?? ''} ${m[2] ?? ''}`,
  );
  const twice = [...new Set(renewals.filter((r, i) => renewals.indexOf(r) !== i))];
  const renewedIds = renewals.map((r) => r.split(' ')[0] ?? '');
  const again = [...new Set(renewedIds.filter((id, i) => renewedIds.indexOf(id) !== i))];
  const failures = [...logs.matchAll(/WARN\s+Renewal of (.*?) site=/g)].map((m) => m[1] ?? '');
  const total = [...times.values()].reduce((a, n) => a + n, 0);
  return { times, total, twice, again, failures };
}

/** A broker, a fleet waiting in provisioning mode, and the provisioner site's renewal settings, for one flow. */
async function network(
  l: Lab,
  flow: Flow,
  prefix: string,
  renewals: Readonly<Record<string, unknown>>,
  count = servers(),
): Promise<{ fleet: LabFleet; site: SiteSpec; env?: Readonly<Record<string, string>> }> {
  const fleetSpec = { prefix, count, withConfig: false };
  if (flow === 'pki') {
    const b = await l.broker();
    const url = `nats://127.0.0.1:${b.port}`;
    const fleet = await l.fleet({
      ...fleetSpec,
      provisioningUrls: [url],
      // --default: reprovision brings the server back into provisioning mode
      jwt: { provisionByDefault: true },
      signCsr: true,
      certValidityMs: VALIDITY_MS,
      configuration: { rpcauthorization: '0' },
    });
    const yaml = { ...renewals, renewal_choria_config: await renewerConfig(l, url) };
    return { fleet, site: { site: 'renew', brokerUrls: [url], features: { pki: true }, yaml } };
  }
  // ed25519: an Organization Issuer network; --default brings the servers back after reprovision
  // (the choria provider they run does not: without it they crash-loop)
  const net = await issuerNetwork(l, 'ours', 'provisioner.lab.example');
  const fleet = await l.fleet({
    ...fleetSpec,
    withConfig: true,
    provisioningUrls: [net.url],
    ...net.fleet,
    jwt: { ...net.fleet.jwt, provisionByDefault: true },
    configuration: { ...net.fleet.configuration, rpcauthorization: '0' },
  });
  const yaml = {
    ...net.site.yaml,
    ...renewals,
    server_jwt_validity: `${VALIDITY_MS / 1000}s`,
    renewal_choria_config: await net.fleetClient(RENEWER),
  };
  const site: SiteSpec = { ...net.site, site: 'renew', brokerUrls: [net.url], yaml };
  return { fleet, site, env: net.env };
}

async function renewalRow(
  l: Lab,
  flow: Flow,
  prefix: string,
  instances: number,
  restartHalfway: boolean,
): Promise<{ run: RenewalRun; sent: Sent }> {
  const { fleet, site, env } = await network(l, flow, prefix, {
    renewal_window: 60,
    renewal_margin: '30s',
    renewal_concurrency: CONCURRENCY,
    renewal_return_timeout: '90s',
    ...(instances > 1 ? { coordination: 'active_active' } : {}),
  });
  await fleet.start();
  await waitWaiting(fleet);
  const start = (name: string): Promise<LabProvisioner> =>
    l.provisioner({
      kind: 'ours',
      name,
      identity: 'provisioner.lab.example',
      sites: [site],
      ...(env !== undefined ? { env } : {}),
    });
  const provisioners = await Promise.all(Array.from({ length: instances }, (_, i) => start(`ours-${i + 1}`)));
  const r = await waitProvisioned([fleet], 120_000);
  expect(r.pending, 'servers not provisioned the first time').toEqual([]);
  const held = (id: string): number => serverCredential(flow, fleet, id)?.notAfter ?? 0;
  const first = new Map(fleet.identities.map((id) => [id, held(id)]));
  expect(
    [...first].filter(([, t]) => t === 0).map(([id]) => id),
    'servers without credentials',
  ).toEqual([]);
  const watching = watchRenewals(flow, fleet, first);
  if (restartHalfway) {
    // halfway through the renewals the provisioner stops and starts again, its history in the bucket
    const half = Math.ceil(fleet.identities.length / 2);
    const renewed = (): number => fleet.identities.filter((id) => held(id) > (first.get(id) ?? 0)).length;
    while (renewed() < half && Date.now() < Math.max(...first.values())) await sleep(250);
    const old = provisioners.shift();
    await old?.stop('SIGTERM');
    provisioners.push(await start('ours-restarted'), ...(old === undefined ? [] : [old]));
  }
  const run = await watching;
  return { run, sent: reprovisionsSent(provisioners, fleet.identities) };
}

function expectRenewed(name: string, run: RenewalRun, sent: Sent): void {
  console.log(
    `interop ${name}: ${sent.times.size - run.notRenewed.length}/${sent.times.size} renewed, at most ` +
      `${run.mostInProvisioning} in provisioning at once, reprovision sent ${sent.total} times` +
      (sent.again.length > 0 ? ` (again, for renewed credentials come due: ${sent.again.join(', ')})` : ''),
  );
  expect(sent.failures, 'renewals that failed').toEqual([]);
  expect(run.notRenewed, 'servers without a new certificate before the first expired').toEqual([]);
  expect(run.late, 'servers renewed after their first certificate expired').toEqual([]);
  expect(run.keyMismatch, 'servers whose new certificate does not match their key').toEqual([]);
  expect(run.notConnected, 'servers not connected with their new certificate').toEqual([]);
  expect(run.mostInProvisioning, 'servers in provisioning mode at once').toBeLessThanOrEqual(CONCURRENCY);
  expect(sent.twice, 'servers sent reprovision twice for the same credentials').toEqual([]);
}

interface RenewalStatus {
  readonly sites: {
    readonly renewals?: {
      readonly stopped?: string;
      readonly counts: Record<string, number>;
      readonly failed: { identity: string; reason?: string }[];
      readonly notRenewable: { identity: string; reason?: string }[];
    };
  }[];
}

/**
 * Two fleets behind one broker and one provisioner: servers that refuse `reprovision` (RPC
 * authorization on, no policy for it) and servers whose provisioning JWT was made without
 * --default (go-choria would strand them). Watched until every first certificate's renewal
 * window has passed.
 */
async function refusalsRow(l: Lab): Promise<void> {
  const n = Math.min(servers(), 10);
  const b = await l.broker();
  const url = `nats://127.0.0.1:${b.port}`;
  const common = { count: n, provisioningUrls: [url], signCsr: true, certValidityMs: VALIDITY_MS };
  const refusing = await l.fleet({ ...common, prefix: 'rref', withConfig: false, jwt: { provisionByDefault: true } });
  const stranded = await l.fleet({ ...common, prefix: 'rstr', withConfig: true });
  await Promise.all([refusing.start(), stranded.start()]);
  await Promise.all([waitWaiting(refusing), waitWaiting(stranded)]);
  const yaml = {
    renewal_choria_config: await renewerConfig(l, url),
    renewal_window: 60,
    renewal_margin: '30s',
    renewal_failure_limit: 2,
  };
  const p = await l.provisioner({
    kind: 'ours',
    name: 'ours',
    identity: 'provisioner.lab.example',
    sites: [{ site: 'renew', brokerUrls: [url], features: { pki: true }, yaml }],
  });
  const r = await waitProvisioned([refusing, stranded], 120_000);
  expect(r.pending, 'servers not provisioned').toEqual([]);
  const firsts = [...refusing.identities, ...stranded.identities].map((id) => {
    const f = refusing.identities.includes(id) ? refusing : stranded;
    return serverCert(f, id)?.notAfter ?? 0;
  });
  // past every server's renewal window (it closes renewal_margin before the expiry)
  const windowsClosed = Math.max(...firsts) - 30_000 + 5_000;
  while (Date.now() < windowsClosed) await sleep(2_000);
  const renewals = await renewalsOf(p);
  const { times: sent, total } = reprovisionsSent([p], [...refusing.identities, ...stranded.identities]);
  console.log(
    `interop r-refusals: stopped: ${renewals.stopped ?? 'no'}; reprovision sent ${total} times; ` +
      `${renewals.counts['not-renewable'] ?? 0} not renewable`,
  );
  expect(renewals.stopped, 'the renewals stopped after 2 refusals in a row').toContain('2 renewals failed in a row');
  expect(total, 'reprovision sent before the renewals stopped').toBe(2);
  expect(renewals.failed.map((f) => f.reason)).toEqual([
    expect.stringContaining('You are not authorized to call this agent or action'),
    expect.stringContaining('You are not authorized to call this agent or action'),
  ]);
  expect(
    stranded.identities.filter((id) => (sent.get(id) ?? 0) > 0),
    'stranded servers sent reprovision',
  ).toEqual([]);
  expect(renewals.counts['not-renewable']).toBe(n);
  expect(renewals.notRenewable[0]?.reason).toContain('made without --default');
  // the refusing servers kept running with their first certificates
  expect(
    [...refusing.identities, ...stranded.identities].filter((id) => {
      const f = refusing.identities.includes(id) ? refusing : stranded;
      return inProvisioning(f, id);
    }),
  ).toEqual([]);
}

/** A few pki servers that go-choria brings back after reprovision (--default, authorization off), waiting. */
async function renewableFleet(l: Lab, prefix: string): Promise<{ fleet: LabFleet; site: SiteSpec }> {
  const renewals = {
    renewal_window: 60,
    renewal_margin: '30s',
    renewal_failure_limit: 2,
    renewal_return_timeout: '30s',
  };
  const { fleet, site } = await network(l, 'pki', prefix, renewals, Math.min(servers(), 6));
  await fleet.start();
  await waitWaiting(fleet);
  return { fleet, site };
}

async function startOurs(l: Lab, name: string, site: SiteSpec): Promise<LabProvisioner> {
  return l.provisioner({ kind: 'ours', name, identity: 'provisioner.lab.example', sites: [site] });
}

async function renewalsOf(p: LabProvisioner): Promise<NonNullable<RenewalStatus['sites'][number]['renewals']>> {
  const renewals = ((await p.status()) as RenewalStatus).sites[0]?.renewals;
  if (renewals === undefined) throw new Error(`${p.name}: /status has no renewals`);
  return renewals;
}

/** Waits until the renewals of `p` stopped, or `deadline` passed; a provisioner just started may not answer yet. */
async function untilStopped(p: LabProvisioner, deadline: number): Promise<void> {
  const stopped = (): Promise<boolean> =>
    renewalsOf(p).then(
      (r) => r.stopped !== undefined,
      () => false,
    );
  while (!(await stopped()) && Date.now() < deadline) await sleep(1_000);
}

/**
 * The operator changed the site's token after the servers were provisioned: they hold the old one
 * and go-choria refuses reprovision with its reason; two refusals in a row stop the renewals.
 */
async function wrongTokenRow(l: Lab): Promise<void> {
  const { fleet, site } = await renewableFleet(l, 'rtok');
  const first = await startOurs(l, 'ours', site);
  expect((await waitProvisioned([fleet], 120_000)).pending, 'servers not provisioned').toEqual([]);
  await first.stop('SIGTERM');
  const p = await startOurs(l, 'ours-new-token', { ...site, yaml: { ...site.yaml, token: 'a-rotated-token' } });
  const expiries = fleet.identities.map((id) => serverCert(fleet, id)?.notAfter ?? 0);
  await untilStopped(p, Math.max(...expiries));
  const renewals = await renewalsOf(p);
  const { total } = reprovisionsSent([first, p], fleet.identities);
  console.log(`interop r-wrong-token: stopped: ${renewals.stopped ?? 'no'}; reprovision sent ${total} times`);
  expect(renewals.stopped, 'the renewals stopped after 2 refusals in a row').toContain('2 renewals failed in a row');
  expect(total, 'reprovision sent before the renewals stopped').toBe(2);
  expect(renewals.failed.map((f) => f.reason)).toEqual([
    expect.stringContaining('Incorrect provision token supplied'),
    expect.stringContaining('Incorrect provision token supplied'),
  ]);
  expect(
    fleet.identities.filter((id) => inProvisioning(fleet, id)),
    'servers in provisioning mode',
  ).toEqual([]);
}

/**
 * The round's canary is sent reprovision and then stopped before it restarts into provisioning
 * mode: the round stops with that one server out, and nothing more is sent while the renewal
 * windows of the others pass.
 */
async function canaryNotBackRow(l: Lab): Promise<void> {
  const { fleet, site } = await renewableFleet(l, 'rcan');
  const p = await startOurs(l, 'ours', site);
  expect((await waitProvisioned([fleet], 120_000)).pending, 'servers not provisioned').toEqual([]);
  const expiries = fleet.identities.map((id) => serverCert(fleet, id)?.notAfter ?? 0);
  let canary: string | undefined;
  // go-choria restarts 2 s or more after it answered reprovision: stopped before that
  while (canary === undefined && Date.now() < Math.max(...expiries)) {
    canary = /Sent reprovision to (\S+):/.exec(p.log())?.[1];
    await sleep(100);
  }
  if (canary === undefined) throw new Error('no server was sent reprovision before the certificates expired');
  await fleet.stop([canary]);
  await untilStopped(p, Math.max(...expiries));
  // past every server's renewal window (it closes renewal_margin before the expiry)
  while (Date.now() < Math.max(...expiries) - 25_000) await sleep(2_000);
  const renewals = await renewalsOf(p);
  const { total } = reprovisionsSent([p], fleet.identities);
  console.log(`interop r-canary: stopped: ${renewals.stopped ?? 'no'}; reprovision sent ${total} times`);
  expect(renewals.stopped).toContain('not provisioned again within 30 s of reprovision');
  expect(renewals.failed.map((f) => f.identity)).toEqual([canary]);
  expect(total, 'reprovision sent to the canary only').toBe(1);
  const others = fleet.identities.filter((id) => id !== canary);
  expect(
    others.filter((id) => inProvisioning(fleet, id) || !connectedSince(fleet, id, 0)),
    'servers out besides the canary',
  ).toEqual([]);
}

describe.skipIf(!available || !kinds.includes('ours'))(
  'interop: credential renewal with real go-choria servers',
  () => {
    const rows: [string, Flow, number, boolean][] = [
      [
        '(r) pki: certificates valid for 4 minutes renewed before they expire, a canary first, bounded',
        'pki',
        1,
        false,
      ],
      ['(r) pki renewal with the provisioner restarted halfway', 'pki', 1, true],
      ['(r) pki renewal by two active/active instances', 'pki', 2, false],
      ['(r) ed25519: server JWTs valid for 4 minutes renewed before they expire', 'ed25519', 1, false],
      ['(r) ed25519 renewal with the provisioner restarted halfway', 'ed25519', 1, true],
      ['(r) ed25519 renewal by two active/active instances', 'ed25519', 2, false],
    ];
    it('(r) refusals: go-choria refuses reprovision (not authorized) and the renewals stop; --default-less servers are never sent it', async () => {
      await withLab('r-refusals', refusalsRow);
    });

    it('(r) wrong token: go-choria refuses reprovision with its reason and the renewals stop', async () => {
      await withLab('r-wrong-token', wrongTokenRow);
    });

    it('(r) a canary that does not come back stops the round with one server out', async () => {
      await withLab('r-canary', canaryNotBackRow);
    });

    it.each(rows)('%s', async (name, flow, instances, restart) => {
      const id = `r-${flow}${instances > 1 ? '-aa' : ''}${restart ? '-restart' : ''}`;
      await withLab(id, async (l) => {
        const { run, sent } = await renewalRow(l, flow, id.replace(/-/g, '').slice(0, 8), instances, restart);
        expectRenewed(`${id} ${name}`, run, sent);
      });
    });
  },
);
