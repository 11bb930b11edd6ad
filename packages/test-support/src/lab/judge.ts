// What the servers of the interop lab hold, read from their own disks: the judge of the renewal
// and fault rows. A server's certificate (pki) or server JWT (ed25519) with whether its key matches,
// whether it is in provisioning mode now (its log), whether it is connected with its configuration
// (its status file), and the renewal client's configuration.
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Lab } from './lab.js';
import type { LabFleet } from './servers.js';

/** The identity of the renewal client (its certificate name ends in .choria, which go-choria accepts). */
export const RENEWER = 'renewals.choria';

export interface Cert {
  readonly notAfter: number;
  readonly matchesKey: boolean;
}

export function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

export type Flow = 'pki' | 'ed25519';

/** What the server holds now: its certificate (pki) or server JWT (ed25519), from its own disk. */
export function serverCredential(flow: Flow, fleet: LabFleet, id: string): Cert | undefined {
  return flow === 'pki' ? serverCert(fleet, id) : serverToken(fleet, id);
}

/** The server JWT the provisioner gave it, and whether it names the public key of the server's seed. */
export function serverToken(fleet: LabFleet, id: string): Cert | undefined {
  try {
    const jwt = readFileSync(join(fleet.nodeDir(id), 'server.jwt'), 'utf8').trim();
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      exp?: number;
      public_key?: string;
    };
    const seed = Buffer.from(readFileSync(join(fleet.nodeDir(id), 'server.seed'), 'utf8').trim(), 'hex');
    const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
    const jwk = createPublicKey(createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })).export({
      format: 'jwk',
    });
    const publicHex = Buffer.from(jwk.x ?? '', 'base64url').toString('hex');
    return { notAfter: (claims.exp ?? 0) * 1000, matchesKey: claims.public_key === publicHex };
  } catch {
    return undefined; // not written yet, or caught mid-write
  }
}

/** The certificate the server's configuration names, and whether its key (on the server's disk) matches it. */
export function serverCert(fleet: LabFleet, id: string): Cert | undefined {
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
export function inProvisioning(fleet: LabFleet, id: string): boolean {
  const log = readText(join(fleet.nodeDir(id), 'server.log'));
  // reprovision rewrites the configuration too: only the provisioner's configure counts here
  const configured = log.split('\n').filter((l) => l.includes('Rewriting configuration file') && !l.includes(RENEWER));
  return log.split(`to provisioning.node.${id}`).length - 1 > configured.length;
}

/** Connected with its configuration, by go-choria's status file written after `since`. */
export function connectedSince(fleet: LabFleet, id: string, since: number): boolean {
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
export async function renewerConfig(l: Lab, brokerUrl: string): Promise<string> {
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
