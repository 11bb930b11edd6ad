// Key material and per-mode settings for the demo, all fresh in a temp dir:
//   ed25519  an organisation issuer (signs the nodes' provisioning JWTs, EdDSA), a provisioner
//            signing seed and a chain token for it issued by the organisation, so the server JWTs
//            the provisioner mints are chain-issued and verified by the nodes against the issuer;
//   pki      an RSA key signing the provisioning JWTs (RS256) and a CA directory for the helper;
//   jwt      the same RSA key, no CSRs;
//   plain    no provisioning JWT at all.
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  randomBytes,
  randomUUID,
  sign,
  type KeyObject,
} from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FleetOptions } from '@choria-provisioner/simulator';

export const DEMO_MODES = ['ed25519', 'pki', 'jwt', 'plain'] as const;
export type DemoMode = (typeof DEMO_MODES)[number];

export interface DemoKeys {
  /** provisioner YAML lines for the mode (features and key settings) */
  readonly yaml: string;
  /** fleet options for the mode: provisioning JWT signer, server JWT verification, CSR key size */
  readonly fleet: Pick<FleetOptions, 'jwt' | 'serverJwtVerification' | 'rsaBits'>;
  /** the example helper (examples/helpers/, shipped in the package's helpers/) that decides for this mode */
  readonly helperScript: string;
  /** its arguments: the JSON-lines switch where the script also has a one-shot stdin mode */
  readonly helperArgs: readonly string[];
  /** environment the helper needs beyond BROKER_URL */
  readonly helperEnv: Readonly<Record<string, string>>;
}

/**
 * CSR key size the simulated nodes generate in pki mode. Real servers use 2048 bits, but generating
 * those keys for hundreds of simulated nodes on one machine would dominate the demo; 1024-bit keys
 * exercise the same CSR, signing and certificate path at a fraction of the cost.
 */
export const PKI_NODE_RSA_BITS = 1024;

const CHAIN_TOKEN_VALIDITY_S = 365 * 86400;
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function ed25519FromSeed(seed: Buffer): { key: KeyObject; publicHex: string } {
  const key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  // the raw 32-byte public key is the tail of its SPKI DER encoding
  const publicHex = createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
  return { key, publicHex };
}

const b64url = (data: string | Buffer): string => Buffer.from(data).toString('base64url');

/**
 * A client token issued by the organisation for the provisioner's signing key:
 * `iss` names the issuer, `tcs` is the issuer's signature over `<jti>.<public key>`.
 */
export function chainToken(
  org: KeyObject,
  orgPublicHex: string,
  signerPublicHex: string,
  nowS = Math.floor(Date.now() / 1000),
): string {
  const jti = randomUUID();
  const tcs = sign(null, Buffer.from(`${jti}.${signerPublicHex}`), org).toString('hex');
  const claims = {
    callerid: 'provisioner_signer',
    purpose: 'choria_client_id',
    tcs,
    public_key: signerPublicHex,
    iss: `I-${orgPublicHex}`,
    exp: nowS + CHAIN_TOKEN_VALIDITY_S,
    nbf: nowS,
    iat: nowS,
    jti,
  };
  const signed = `${b64url(JSON.stringify({ alg: 'EdDSA', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}`;
  return `${signed}.${b64url(sign(null, Buffer.from(signed), org))}`;
}

async function rsaSigner(dir: string): Promise<{ keyPem: string; publicFile: string }> {
  // Encoded by the generation itself: exporting a freshly generated KeyObject can deadlock Node 20.20
  // when a garbage collection runs the finished generation job's destructor during the export.
  const { privateKey: keyPem, publicKey: publicPem } = await promisify(generateKeyPair)('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const publicFile = join(dir, 'provisioning-signer-public.pem');
  writeFileSync(publicFile, publicPem);
  return { keyPem, publicFile };
}

/** Creates the key material of `mode` in `dir` (which must exist and be private). */
export async function makeDemoKeys(mode: DemoMode, dir: string): Promise<DemoKeys> {
  switch (mode) {
    case 'ed25519': {
      const orgSeed = randomBytes(32);
      const org = ed25519FromSeed(orgSeed);
      const signerSeed = randomBytes(32);
      const signer = ed25519FromSeed(signerSeed);
      const seedFile = join(dir, 'provisioner-signer.seed');
      const tokenFile = join(dir, 'provisioner-signer.jwt');
      writeFileSync(seedFile, signerSeed.toString('hex'), { mode: 0o600 });
      writeFileSync(tokenFile, chainToken(org.key, org.publicHex, signer.publicHex) + '\n', { mode: 0o600 });
      return {
        yaml: [
          `jwt_verify_cert: ${org.publicHex}`,
          `jwt_signing_key: ${JSON.stringify(seedFile)}`,
          `jwt_signing_token: ${JSON.stringify(tokenFile)}`,
          'features:',
          '  jwt: true',
          '  ed25519: true',
        ].join('\n'),
        fleet: {
          jwt: { signer: 'ed25519', seedHex: orgSeed.toString('hex') },
          serverJwtVerification: { issuerPublicHex: org.publicHex },
        },
        helperScript: 'ed25519-helper.mjs',
        helperArgs: ['--lines'],
        helperEnv: { ISSUER_PUBLIC: org.publicHex },
      };
    }
    case 'pki': {
      const { keyPem, publicFile } = await rsaSigner(dir);
      const caDir = join(dir, 'ca');
      mkdirSync(caDir, { mode: 0o700 });
      return {
        yaml: [`jwt_verify_cert: ${JSON.stringify(publicFile)}`, 'features:', '  jwt: true', '  pki: true'].join('\n'),
        fleet: { jwt: { signer: 'rsa', keyPem }, rsaBits: PKI_NODE_RSA_BITS },
        helperScript: 'x509-ca-helper.mjs',
        helperArgs: ['--lines'],
        helperEnv: { CA_DIR: caDir },
      };
    }
    case 'jwt': {
      const { keyPem, publicFile } = await rsaSigner(dir);
      return {
        yaml: [`jwt_verify_cert: ${JSON.stringify(publicFile)}`, 'features:', '  jwt: true'].join('\n'),
        fleet: { jwt: { signer: 'rsa', keyPem } },
        helperScript: 'pool-helper.mjs',
        helperArgs: [],
        helperEnv: {},
      };
    }
    case 'plain':
      return {
        yaml: '',
        fleet: { jwt: { signer: 'none' } },
        helperScript: 'pool-helper.mjs',
        helperArgs: [],
        helperEnv: {},
      };
  }
}
