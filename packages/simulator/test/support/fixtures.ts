// Key material and helpers shared by the simulator integration tests.
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import type { NatsConnection } from 'nats';
import { readVector, readVectorJson } from '@choria-provisioner/test-support/vectors';

export function ed25519Private(seedHex: string): KeyObject {
  return createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seedHex, 'hex')]),
    format: 'der',
    type: 'pkcs8',
  });
}

export function ed25519Public(hex: string): KeyObject {
  return createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(hex, 'hex')]),
    format: 'der',
    type: 'spki',
  });
}

interface KatKeys {
  keys: { provisioner_signing_seed_hex: string; provisioner_signing_public_hex: string };
}

export const rsaSignerPem = (): string => readVector('crypto', 'jwt-signer.pem');
export const rsaSignerPublicPem = (): string => readVector('crypto', 'jwt-signer-public.pem');
export const edProvisioningSeed = (): string => readVector('tokens', 'ed25519-signer.seed').trim();
export const edProvisioningPublic = (): string => readVector('tokens', 'ed25519-signer.public').trim();
export const serverJwtSigner = (): { seedHex: string; publicHex: string } => {
  const k = readVectorJson<KatKeys>('tokens', 'jwt-kat.json').keys;
  return { seedHex: k.provisioner_signing_seed_hex, publicHex: k.provisioner_signing_public_hex };
};

/** A plain (not chain-issued) server token as the provisioner would sign it with an ed25519 key. */
export async function makeServerJwt(identity: string, nodePublicHex: string, seedHex: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    identity,
    collectives: ['choria'],
    ou: 'choria',
    purpose: 'choria_server',
    public_key: nodePublicHex,
    iss: 'Choria Provisioner',
    exp: now + 3600 * 24,
    nbf: now,
    iat: now,
  })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
    .sign(ed25519Private(seedHex));
}

export interface SeenEvent {
  subject: string;
  event: Record<string, unknown>;
}

/** Collects lifecycle events from the broker. */
export function collectEvents(nc: NatsConnection): SeenEvent[] {
  const seen: SeenEvent[] = [];
  nc.subscribe('choria.lifecycle.event.>', {
    callback: (_e, m) =>
      seen.push({ subject: m.subject, event: JSON.parse(Buffer.from(m.data).toString()) as Record<string, unknown> }),
  });
  return seen;
}

/** The Choria-format event inside a CloudEvent (or the event itself). */
export function eventData(e: SeenEvent): Record<string, unknown> {
  return (e.event['specversion'] === '1.0' ? e.event['data'] : e.event) as Record<string, unknown>;
}
