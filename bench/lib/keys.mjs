// Key material for the ed25519 flow, shaped like an Organization Issuer network: an issuer seed that
// signs the nodes' provisioning JWT and the provisioner's client JWT (a chain token with `tcs`), and
// the provisioner's own seed, which signs its v2 requests and the server JWTs it mints.
import { createPrivateKey, createPublicKey, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ksuid } from '@choria-provisioner/core/internal';

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** An Ed25519 private key from its 32-byte seed. */
export function keyFromSeed(seed) {
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

function publicHex(key) {
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - 32).toString('hex');
}

const b64u = (b) => Buffer.from(b).toString('base64url');

/** Writes the files into a fresh temp dir and returns their paths and the issuer's public key. */
export function makeIssuerKeys() {
  const dir = mkdtempSync(join(tmpdir(), 'cpts-bench-keys-'));
  const orgSeed = randomBytes(32);
  const provSeed = randomBytes(32);
  const org = keyFromSeed(orgSeed);
  const orgPublic = publicHex(org);
  const provPublic = publicHex(keyFromSeed(provSeed));

  const now = Math.floor(Date.now() / 1000);
  const jti = ksuid(now);
  const tcs = sign(null, Buffer.from(`${jti}.${provPublic}`), org).toString('hex');
  const claims = {
    callerid: 'provisioner_signer',
    purpose: 'choria_client_id',
    tcs,
    public_key: provPublic,
    iss: `I-${orgPublic}`,
    exp: now + 86400,
    nbf: now,
    iat: now,
    jti,
  };
  const head = `${b64u(JSON.stringify({ alg: 'EdDSA', typ: 'JWT' }))}.${b64u(JSON.stringify(claims))}`;
  const clientJwt = `${head}.${b64u(sign(null, Buffer.from(head), org))}`;

  const files = {
    dir,
    orgSeedFile: join(dir, 'issuer.seed'),
    provSeedFile: join(dir, 'provisioner.seed'),
    clientJwtFile: join(dir, 'provisioner.jwt'),
    orgPublic,
  };
  writeFileSync(files.orgSeedFile, orgSeed.toString('hex'), { mode: 0o600 });
  writeFileSync(files.provSeedFile, provSeed.toString('hex'), { mode: 0o600 });
  writeFileSync(files.clientJwtFile, `${clientJwt}\n`);
  return files;
}
