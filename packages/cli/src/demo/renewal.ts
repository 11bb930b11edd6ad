// `choria-provisioner demo --renew`: the fleet's credentials are short-lived, and once every node is
// provisioned the demo goes on until the provisioner has renewed each node's once, as a site with
// `renewal_choria_config` does (docs/renewal.md): `reprovision` on the fleet's own collective through a
// client configuration of its own, a canary first, a bounded number at once.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FleetOptions, SimulatedFleet } from '@choria-provisioner/simulator';
import type { Provisioner } from '@choria-provisioner/core';
import type { DemoMode } from './keys.js';

/** The modes whose servers are given credentials that expire: a server JWT (ed25519), a certificate (pki). */
export const RENEWABLE_MODES: readonly DemoMode[] = ['ed25519', 'pki'];

/** How long the demo's credentials are valid; the renewals happen in the last half, 5 s or more before the end. */
export const DEMO_CREDENTIALS_S = 30;
const RETURN_TIMEOUT_S = 20;
const WAIT_TICK_MS = 100;
const LINE_EVERY_MS = 5_000;

export interface DemoRenewal {
  /** provisioner YAML lines: the renewal keys, and the server JWT validity in ed25519 mode */
  readonly yaml: string;
  /** environment of the helper: how long the credentials it hands out are valid */
  readonly helperEnv: Readonly<Record<string, string>>;
  /** the simulated servers answer reprovision and come back into provisioning mode (--default) */
  readonly fleet: Pick<FleetOptions, 'reprovision'>;
  /** at most this many renew at once */
  readonly concurrency: number;
}

/** The renewal settings of a demo of `nodes` nodes, and the renewal client's configuration written into `dir`. */
export function demoRenewal(mode: DemoMode, nodes: number, brokerUrl: string, dir: string): DemoRenewal {
  const choriaFile = join(dir, 'renewals.cfg');
  // the demo's broker is plain: the site's choria_insecure applies to this client too
  writeFileSync(
    choriaFile,
    ['identity = renewals.demo', `plugin.choria.middleware_hosts = ${brokerUrl}`, 'collectives = mcollective', ''].join(
      '\n',
    ),
  );
  const concurrency = Math.max(1, Math.ceil(nodes / 10));
  const yaml = [
    ...(mode === 'ed25519' ? [`server_jwt_validity: ${DEMO_CREDENTIALS_S}s`] : []),
    `renewal_choria_config: ${JSON.stringify(choriaFile)}`,
    'renewal_window: 50',
    'renewal_margin: 5s',
    `renewal_concurrency: ${concurrency}`,
    `renewal_return_timeout: ${RETURN_TIMEOUT_S}s`,
  ].join('\n');
  return {
    yaml,
    // the example helpers: a certificate of this validity; no server JWT expiry (server_jwt_validity)
    helperEnv: mode === 'pki' ? { CERT_VALIDITY_S: String(DEMO_CREDENTIALS_S) } : { SERVER_JWT_YEARS: '0' },
    fleet: { reprovision: { collective: 'mcollective', comesBack: true } },
    concurrency,
  };
}

/** How the renewals ended: every node renewed once, or why not. */
export interface RenewalsEnd {
  readonly renewed: number;
  /** the most nodes back in provisioning mode at once */
  readonly mostOut: number;
  readonly interruption: string | undefined;
}

export interface RenewalsWait {
  readonly provisioner: Provisioner;
  readonly fleet: SimulatedFleet;
  readonly nodes: number;
  readonly deadline: number;
  /** why the demo must stop now (a signal), or undefined */
  readonly interrupted: () => string | undefined;
  readonly doing: (what: string) => void;
  /** a progress line, every few seconds */
  readonly line: (text: string) => void;
}

/** Waits until every node was sent `reprovision` and is provisioned again, the renewals stop, or the wait must end. */
export async function waitForRenewals(w: RenewalsWait): Promise<RenewalsEnd> {
  let mostOut = 0;
  let lineAt = Date.now();
  w.line(
    `renewals: every server provisioned, its credentials valid for ${DEMO_CREDENTIALS_S} s, renewed in their last half`,
  );
  for (;;) {
    const nodes = w.fleet.report().nodes;
    const renewed = nodes.filter((n) => n.reprovisionCount >= 1 && n.state === 'provisioned').length;
    const out = nodes.filter((n) => n.state !== 'provisioned').length;
    mostOut = Math.max(mostOut, out);
    w.doing(`renewing credentials: ${renewed} of ${w.nodes} nodes renewed`);
    if (Date.now() - lineAt >= LINE_EVERY_MS || renewed >= w.nodes) {
      lineAt = Date.now();
      w.line(`renewals: ${renewed}/${w.nodes} renewed, ${out} in provisioning mode now`);
    }
    const end = (interruption: string | undefined): RenewalsEnd => ({ renewed, mostOut, interruption });
    if (renewed >= w.nodes) return end(undefined);
    const stopped = w.provisioner.status({ limit: 0 }).renewals?.stopped;
    if (stopped !== undefined) return end(`the renewals stopped: ${stopped}`);
    const interrupted = w.interrupted();
    if (interrupted !== undefined) return end(`${interrupted} before every node was renewed`);
    if (Date.now() > w.deadline) return end('the deadline passed before every node was renewed');
    await sleep(WAIT_TICK_MS);
  }
}
