// Interop rows (a)-(d): real go-choria servers behind a real Choria Broker, provisioned by this
// project's provisioner and, side by side, by the upstream Go provisioner. Every row fails unless
// every server left provisioning mode with its new configuration within the bound and none was
// configured twice. Needs the prebuilt lab binaries (docs/interop.md); skips in one line without.
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sleep } from '@choria-provisioner/test-support/wait';
import {
  interopSuite,
  issuerNetwork,
  labJwtServers,
  labServers,
  provisionedIdentities,
  restartMidFlow,
  rowBound,
  settleRow,
  siteHistory,
  waitProvisioned,
  waitWaiting,
  withLab,
} from '@choria-provisioner/test-support/lab/index';

const { available, cases: CASES } = interopSuite();
const PROVISIONER = 'provisioner.lab.example';

describe.skipIf(!available)('interop: provisioning real go-choria servers', () => {
  it.each(CASES)('(a) jwt flow: servers waiting before the provisioner starts ($label)', async (c) => {
    const { kind } = c;
    const n = labJwtServers();
    await withLab(`jwt-${c.slug}`, async (l) => {
      const b = await l.broker();
      const url = `nats://127.0.0.1:${b.port}`;
      const fleet = await l.fleet({ prefix: 'jwt', count: n, withConfig: true, provisioningUrls: [url] });
      await fleet.start();
      await waitWaiting(fleet, 60_000 + 300 * n);
      const t0 = Date.now();
      const restart = restartMidFlow(c, b, [fleet], t0);
      await l.provisioner({ kind, name: kind, identity: PROVISIONER, sites: [{ site: 'lab', brokerUrls: [url] }] });
      // a second a server: at 200 the servers themselves, still busy starting, and a helper
      // process per node share the two cores with the provisioner (41-125 s seen for 200)
      const bound = rowBound(n, 30_000, 1_000);
      const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
      await settleRow({ name: '(a) jwt', id: 'a-jwt', c, r, boundMs: bound, restart });
    });
  });

  it.each(CASES)('(b) pki: CSRs signed by the lab CA, certificate and CA written to the node ($label)', async (c) => {
    const { kind } = c;
    const n = labServers();
    await withLab(`pki-${c.slug}`, async (l) => {
      const b = await l.broker();
      const url = `nats://127.0.0.1:${b.port}`;
      const fleet = await l.fleet({
        prefix: 'pki',
        count: n,
        withConfig: true,
        provisioningUrls: [url],
        signCsr: true,
      });
      await fleet.start();
      await waitWaiting(fleet);
      const t0 = Date.now();
      const restart = restartMidFlow(c, b, [fleet], t0);
      await l.provisioner({
        kind,
        name: kind,
        identity: PROVISIONER,
        sites: [{ site: 'lab', brokerUrls: [url], features: { pki: true } }],
      });
      const bound = rowBound(n);
      const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
      await settleRow({ name: '(b) pki', id: 'b-pki', c, r, boundMs: bound, restart });
      const ca = new X509Certificate(l.pki.ca.certPem);
      for (const id of provisionedIdentities(r)) {
        const ssl = join(fleet.nodeDir(id), 'ssl');
        expect(existsSync(join(ssl, 'private.pem')), `${id}: the key its CSR was made with`).toBe(true);
        const cert = new X509Certificate(readFileSync(join(ssl, 'certificate.pem')));
        expect(cert.subject, `${id}: certificate subject`).toContain(`CN=${id}`);
        expect(cert.verify(ca.publicKey), `${id}: certificate signed by the lab CA`).toBe(true);
        expect(readFileSync(join(ssl, 'ca.pem'), 'utf8').trim()).toBe(l.pki.ca.certPem.trim());
      }
    });
  });

  it.each(CASES)(
    '(c) servers booting after the provisioner are provisioned from their startup events ($label)',
    async (c) => {
      const { kind } = c;
      const n = labServers();
      await withLab(`startup-${c.slug}`, async (l) => {
        const b = await l.broker();
        const url = `nats://127.0.0.1:${b.port}`;
        const fleet = await l.fleet({ prefix: 'boot', count: n, withConfig: true, provisioningUrls: [url] });
        await l.provisioner({ kind, name: kind, identity: PROVISIONER, sites: [{ site: 'lab', brokerUrls: [url] }] });
        // past the start-up discovery (which found nothing); the next is a minute away, so only the
        // servers' startup events can get them provisioned within the bound
        await sleep(6_000);
        const t0 = Date.now();
        const restart = restartMidFlow(c, b, [fleet], t0);
        await fleet.start();
        const bound = rowBound(n, 25_000);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
        await settleRow({ name: '(c) startup events', id: 'c-startup-events', c, r, boundMs: bound, restart });
      });
    },
  );

  it.each(CASES)('(d) servers with no configuration file (a --default provisioning JWT) ($label)', async (c) => {
    const { kind } = c;
    const n = labServers();
    await withLab(`default-${c.slug}`, async (l) => {
      const b = await l.broker();
      const url = `nats://127.0.0.1:${b.port}`;
      const fleet = await l.fleet({
        prefix: 'bare',
        count: n,
        withConfig: false,
        provisioningUrls: [url],
        jwt: { provisionByDefault: true },
      });
      await fleet.start();
      await waitWaiting(fleet);
      const t0 = Date.now();
      const restart = restartMidFlow(c, b, [fleet], t0);
      await l.provisioner({ kind, name: kind, identity: PROVISIONER, sites: [{ site: 'lab', brokerUrls: [url] }] });
      const bound = rowBound(n);
      const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
      await settleRow({ name: '(d) no configuration file', id: 'd-no-config-file', c, r, boundMs: bound, restart });
      for (const id of provisionedIdentities(r))
        expect(existsSync(join(fleet.nodeDir(id), 'server.conf')), `${id}: configuration written`).toBe(true);
    });
  });
  it.each(CASES)(
    'protocol v2: an Organization Issuer network, leader election, ed25519 keys, server JWTs chain-issued by the provisioner ($label)',
    async (c) => {
      const { kind } = c;
      const n = labServers();
      await withLab(`v2-${c.slug}`, async (l) => {
        // ours keeps its node history in Choria Streams (a second connection, in the choria account)
        const net = await issuerNetwork(l, kind, PROVISIONER);
        const b = net.broker;
        const url = net.url;
        const fleet = await l.fleet({
          prefix: 'v2',
          count: n,
          withConfig: true,
          provisioningUrls: [url],
          ...net.fleet,
        });
        await fleet.start();
        await waitWaiting(fleet);
        const t0 = Date.now();
        const restart = restartMidFlow(c, b, [fleet], t0);
        const p = await l.provisioner({
          kind,
          name: kind,
          identity: PROVISIONER,
          env: net.env,
          sites: [
            {
              site: 'lab',
              brokerUrls: [url],
              choriaConfig: net.site.choriaConfig,
              features: net.site.features,
              yaml: { ...net.site.yaml, leader_election: true },
            },
          ],
        });
        const bound = rowBound(n);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
        const election = electionTimes(p.log());
        await settleRow({ name: 'protocol v2', id: 'protocol-v2', c, r, boundMs: bound, restart, extra: election });
        for (const id of provisionedIdentities(r)) {
          expect(existsSync(join(fleet.nodeDir(id), 'server.seed')), `${id}: its ed25519 seed`).toBe(true);
          expect(
            readFileSync(join(fleet.nodeDir(id), 'server.jwt'), 'utf8').split('.').length,
            `${id}: its server JWT`,
          ).toBe(3);
        }
        if (kind === 'ours') {
          const history = await siteHistory(p, n);
          expect(history, 'the node history on an Organization Issuer network').toMatchObject({
            store: 'kv',
            connection: 'choria',
            bucket: 'CHORIA_PROVISIONER_HISTORY',
          });
          expect(history?.nodes).toBeGreaterThanOrEqual(n);
          // both provisioners wait a random 0-5 s before their first campaign (go-choria's splay);
          // beyond that, winning an empty election is one request or two
          expect(election.leaderAfterCampaignMs, p.log()).toBeDefined();
          expect(
            (election.leaderAfterCampaignMs ?? 0) - (election.splayMs ?? 0),
            'the time to lead beyond the random wait',
          ).toBeLessThan(1_500);
        }
      });
    },
  );
});

/** From a provisioner's log: when it began campaigning and when it won (ours also logs its random wait). */
function electionTimes(log: string): { leaderAfterStartMs?: number; leaderAfterCampaignMs?: number; splayMs?: number } {
  const lines = log.split('\n');
  const at = (line: string | undefined): number | undefined => {
    const m = line === undefined ? null : /(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?)/.exec(line);
    return m?.[1] === undefined ? undefined : Date.parse(m[1].endsWith('Z') ? m[1] : `${m[1]}Z`);
  };
  const start = at(lines.find((l) => at(l) !== undefined));
  const campaign = lines.find((l) => /Campaigning for leader election|Starting leader election/.test(l));
  const won = at(lines.find((l) => l.includes('Became leader after winning election')));
  const splay = /random wait of (\d+) ms/.exec(campaign ?? '')?.[1];
  const campaignAt = at(campaign);
  return {
    ...(won !== undefined && start !== undefined ? { leaderAfterStartMs: won - start } : {}),
    ...(won !== undefined && campaignAt !== undefined ? { leaderAfterCampaignMs: won - campaignAt } : {}),
    ...(splay !== undefined ? { splayMs: Number(splay) } : {}),
  };
}
