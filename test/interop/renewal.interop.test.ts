// Credential renewal against real go-choria servers (this project's provisioner only: renewal is
// its own; upstream has none). Servers provisioned with certificates the lab CA signs for a few
// minutes, a provisioning JWT made with --default (so `reprovision` brings them back into
// provisioning mode) and RPC authorization off (so the renewal client may call it). The servers'
// own state is the judge: each one's certificate file is read from its disk, its key matched
// against it, its status file read for provisioning mode and its connection.
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sleep } from '@choria-provisioner/test-support/wait';
import {
  interopSuite,
  waitProvisioned,
  waitWaiting,
  withLab,
  type Lab,
  type LabFleet,
  type LabProvisioner,
  type SiteSpec,
} from '@choria-provisioner/test-support/lab/index';
import { wholeNumberSetting } from '@choria-provisioner/test-support/lab/env';

const { available, kinds } = interopSuite();
const CERT_VALIDITY_MS = 4 * 60_000;
const CONCURRENCY = 8;
const RENEWER = 'renewals.choria';

/** LAB_RENEWAL_SERVERS (default 40): servers of the renewal rows. */
const servers = (): number => wholeNumberSetting('LAB_RENEWAL_SERVERS', 40, 60);

interface Cert {
  readonly notAfter: number;
  readonly matchesKey: boolean;
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** The certificate the server's configuration names, and whether its key (on the server's disk) matches it. */
function serverCert(fleet: LabFleet, id: string): Cert | undefined {
  const conf = readText(join(fleet.nodeDir(id), 'server.conf'));
  const certFile = /^plugin\.security\.file\.certificate\s*=\s*(\S+)/m.exec(conf)?.[1];
  const keyFile = /^plugin\.security\.file\.key\s*=\s*(\S+)/m.exec(conf)?.[1];
  if (certFile === undefined || keyFile === undefined) return undefined;
  try {
    const cert = new X509Certificate(readFileSync(certFile));
    const key = createPublicKey(createPrivateKey(readFileSync(keyFile)));
    const der = (k: ReturnType<typeof createPublicKey>): string =>
      k.export({ type: 'spki', format: 'der' }).toString('hex');
    return { notAfter: Date.parse(cert.validTo), matchesKey: der(cert.publicKey) === der(key) };
  } catch {
    return undefined; // caught mid-write
  }
}

/**
 * In provisioning mode now, by the server's own log: it entered provisioning mode (subscribed to
 * its provisioning subject) more often than the provisioner configured it. go-choria's status
 * file cannot tell: `reprovision` rewrites the configuration without the status file's path.
 */
function inProvisioning(fleet: LabFleet, id: string): boolean {
  const log = readText(join(fleet.nodeDir(id), 'server.log'));
  // reprovision rewrites the configuration too: only the provisioner's configure counts here
  const configured = log.split('\n').filter((l) => l.includes('Rewriting configuration file') && !l.includes(RENEWER));
  return log.split(`to provisioning.node.${id}`).length - 1 > configured.length;
}

/** Connected with its configuration, by go-choria's status file written after `since`. */
function connectedSince(fleet: LabFleet, id: string, since: number): boolean {
  const file = join(fleet.nodeDir(id), 'status.json');
  try {
    if (statSync(file).mtimeMs <= since) return false;
    const s = JSON.parse(readFileSync(file, 'utf8')) as { provisioning_mode?: unknown; connected_server?: unknown };
    return s.provisioning_mode === false && typeof s.connected_server === 'string' && s.connected_server !== '';
  } catch {
    return false;
  }
}

/** The Choria client configuration of the renewer: its own certificate on the fleet's collective. */
async function renewerConfig(l: Lab, brokerUrl: string): Promise<string> {
  const pair = await l.pki.client(RENEWER);
  const file = join(l.dir, 'renewer-choria.cfg');
  writeFileSync(
    file,
    [
      `identity = ${RENEWER}`,
      `plugin.choria.middleware_hosts = ${brokerUrl}`,
      'plugin.security.provider = file',
      `plugin.security.file.certificate = ${pair.certFile}`,
      `plugin.security.file.key = ${pair.keyFile}`,
      `plugin.security.file.ca = ${l.pki.caFile}`,
      '',
    ].join('\n'),
  );
  return file;
}

interface RenewalRun {
  /** per server: renewed before its first certificate expired, with a key that matches */
  readonly late: string[];
  readonly notRenewed: string[];
  readonly keyMismatch: string[];
  readonly mostInProvisioning: number;
  readonly notConnected: string[];
}

/** Watches every server until each holds a certificate later than its first (or the first ones expired). */
async function watchRenewals(fleet: LabFleet, first: ReadonlyMap<string, number>): Promise<RenewalRun> {
  const renewedAt = new Map<string, number>();
  const keyMismatch = new Set<string>();
  let most = 0;
  const deadline = Math.max(...first.values()) + 20_000;
  while (renewedAt.size < fleet.identities.length && Date.now() < deadline) {
    let out = 0;
    for (const id of fleet.identities) {
      if (inProvisioning(fleet, id)) out++;
      if (renewedAt.has(id)) continue;
      const cert = serverCert(fleet, id);
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

/** How often each server was sent `reprovision` by the provisioners, from their logs. */
function reprovisionsSent(provisioners: readonly LabProvisioner[], ids: readonly string[]): Map<string, number> {
  const logs = provisioners.map((p) => p.log()).join('\n');
  return new Map(ids.map((id) => [id, logs.split(`Sent reprovision to ${id}`).length - 1]));
}

async function renewalRow(
  l: Lab,
  prefix: string,
  instances: number,
  restartHalfway: boolean,
): Promise<{ run: RenewalRun; sent: Map<string, number> }> {
  const b = await l.broker();
  const url = `nats://127.0.0.1:${b.port}`;
  const fleet = await l.fleet({
    prefix,
    count: servers(),
    withConfig: false,
    provisioningUrls: [url],
    jwt: { provisionByDefault: true },
    signCsr: true,
    certValidityMs: CERT_VALIDITY_MS,
    configuration: { rpcauthorization: '0' },
  });
  await fleet.start();
  await waitWaiting(fleet);
  const site: SiteSpec = {
    site: 'renew',
    brokerUrls: [url],
    features: { pki: true },
    yaml: {
      renewal_choria_config: await renewerConfig(l, url),
      renewal_window: 60,
      renewal_margin: '30s',
      renewal_concurrency: CONCURRENCY,
      renewal_return_timeout: '90s',
      ...(instances > 1 ? { coordination: 'active_active' } : {}),
    },
  };
  const start = (name: string): Promise<LabProvisioner> =>
    l.provisioner({ kind: 'ours', name, identity: 'provisioner.lab.example', sites: [site] });
  const provisioners = await Promise.all(Array.from({ length: instances }, (_, i) => start(`ours-${i + 1}`)));
  const r = await waitProvisioned([fleet], 120_000);
  expect(r.pending, 'servers not provisioned the first time').toEqual([]);
  const first = new Map(fleet.identities.map((id) => [id, serverCert(fleet, id)?.notAfter ?? 0]));
  expect(
    [...first.values()].filter((t) => t === 0),
    'servers without a certificate after provisioning',
  ).toEqual([]);
  const watching = watchRenewals(fleet, first);
  if (restartHalfway) {
    // halfway through the renewals: the provisioner stops and starts again, its history in the bucket
    const half = Math.ceil(fleet.identities.length / 2);
    while (Date.now() < Math.max(...first.values())) {
      const renewed = fleet.identities.filter((id) => (serverCert(fleet, id)?.notAfter ?? 0) > (first.get(id) ?? 0));
      if (renewed.length >= half) break;
      await sleep(250);
    }
    const old = provisioners.shift();
    await old?.stop('SIGTERM');
    provisioners.push(await start('ours-restarted'), ...(old === undefined ? [] : [old]));
  }
  const run = await watching;
  return { run, sent: reprovisionsSent(provisioners, fleet.identities) };
}

function expectRenewed(name: string, run: RenewalRun, sent: Map<string, number>): void {
  console.log(
    `interop ${name}: ${sent.size - run.notRenewed.length}/${sent.size} renewed, at most ` +
      `${run.mostInProvisioning} in provisioning at once, reprovision sent ${[...sent.values()].reduce((a, n) => a + n, 0)} times`,
  );
  expect(run.notRenewed, 'servers without a new certificate before the first expired').toEqual([]);
  expect(run.late, 'servers renewed after their first certificate expired').toEqual([]);
  expect(run.keyMismatch, 'servers whose new certificate does not match their key').toEqual([]);
  expect(run.notConnected, 'servers not connected with their new certificate').toEqual([]);
  expect(run.mostInProvisioning, 'servers in provisioning mode at once').toBeLessThanOrEqual(CONCURRENCY);
  expect(
    [...sent].filter(([, n]) => n > 1),
    'servers sent reprovision more than once',
  ).toEqual([]);
}

describe.skipIf(!available || !kinds.includes('ours'))(
  'interop: credential renewal with real go-choria servers',
  () => {
    it('(r) pki: certificates valid for 4 minutes renewed before they expire, a canary first, bounded', async () => {
      await withLab('r-renewal', async (l) => {
        const { run, sent } = await renewalRow(l, 'rnw', 1, false);
        expectRenewed('r-renewal', run, sent);
      });
    });

    it('(r) pki renewal with the provisioner restarted halfway', async () => {
      await withLab('r-renewal-restart', async (l) => {
        const { run, sent } = await renewalRow(l, 'rnr', 1, true);
        expectRenewed('r-renewal-restart', run, sent);
      });
    });

    it('(r) pki renewal by two active/active instances', async () => {
      await withLab('r-renewal-aa', async (l) => {
        const { run, sent } = await renewalRow(l, 'rna', 2, false);
        expectRenewed('r-renewal-aa', run, sent);
      });
    });
  },
);
