// provisioning.jwt files, made by go-choria itself (`choria jwt provisioning`), so the lab's
// servers read exactly what a real deployment hands them.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const LAB_TOKEN = 'lab-provisioning-token';

export interface ProvisioningJwtOptions {
  readonly file: string;
  /** PEM key (x509 networks) or ed25519 seed file (Organization Issuer networks) */
  readonly signingKey: string;
  readonly urls: readonly string[];
  readonly token?: string;
  /** servers with no configuration file enter provisioning mode (`--default`) */
  readonly provisionByDefault?: boolean;
  /** the provisioner may upgrade the server (`--upgrade`) */
  readonly allowUpdate?: boolean;
  /** protocol v2 (`--protocol-v2`) */
  readonly protocolV2?: boolean;
  /** organization (`--org`, default choria) */
  readonly org?: string;
}

export async function writeProvisioningJwt(choria: string, o: ProvisioningJwtOptions): Promise<void> {
  const args = [
    'jwt',
    'provisioning',
    o.file,
    o.signingKey,
    '--token',
    o.token ?? LAB_TOKEN,
    '--urls',
    o.urls.join(','),
  ];
  if (o.provisionByDefault === true) args.push('--default');
  if (o.allowUpdate === true) args.push('--upgrade');
  if (o.protocolV2 === true) args.push('--protocol-v2');
  if (o.org !== undefined) args.push('--org', o.org);
  try {
    await run(choria, args, { timeout: 30_000 });
  } catch (err) {
    const detail =
      err instanceof Error && 'stderr' in err ? String((err as { stderr: unknown }).stderr).trim() : String(err);
    throw new Error(`could not write the provisioning JWT ${o.file} with ${choria} jwt provisioning: ${detail}`, {
      cause: err,
    });
  }
}

/** An ed25519 key pair made by `choria jwt keys`: the seed file and the public key (hex). */
export interface LabKeyPair {
  readonly seedFile: string;
  readonly publicKey: string;
}

export async function writeKeyPair(choria: string, seedFile: string): Promise<LabKeyPair> {
  try {
    const { stdout } = await run(choria, ['jwt', 'keys', seedFile, '--force'], { timeout: 30_000 });
    const m = /Public Key: ([0-9a-f]{64})/.exec(stdout);
    if (m?.[1] === undefined) throw new Error(`no public key in its output: ${stdout.trim()}`);
    return { seedFile, publicKey: m[1] };
  } catch (err) {
    throw new Error(
      `could not make the ed25519 key pair ${seedFile} with ${choria} jwt keys: ` +
        `${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

export interface ClientJwtOptions {
  readonly file: string;
  readonly identity: string;
  /** the issuer's seed */
  readonly signingKey: string;
  /** the client's own public key (hex) */
  readonly publicKey: string;
  /**
   * Choria Streams: `user` may use existing streams and buckets (`--stream-user`), `admin` may
   * also create them (`--stream-admin`)
   */
  readonly streams?: 'user' | 'admin';
}

async function writeClientJwt(
  choria: string,
  o: ClientJwtOptions,
  permissions: readonly string[],
  what: string,
): Promise<void> {
  const streams = o.streams === undefined ? [] : [`--stream-${o.streams}`];
  const args = [
    'jwt',
    'client',
    o.file,
    o.identity,
    o.signingKey,
    '--public-key',
    o.publicKey,
    ...permissions,
    ...streams,
    '--validity',
    '24h',
  ];
  try {
    await run(choria, args, { timeout: 30_000 });
  } catch (err) {
    throw new Error(
      `could not write ${what} ${o.file} with ${choria} jwt client: ` +
        `${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/** A provisioner's client JWT under an Organization Issuer: may provision servers and issue their JWTs. */
export async function writeProvisionerClientJwt(choria: string, o: ClientJwtOptions): Promise<void> {
  await writeClientJwt(choria, o, ['--server-provisioner', '--issuer'], "the provisioner's client JWT");
}

/** A plain client JWT under an Organization Issuer (an operator's, say, with `streams: 'admin'`). */
export async function writeOperatorClientJwt(choria: string, o: ClientJwtOptions): Promise<void> {
  await writeClientJwt(choria, o, [], 'a client JWT');
}

/** A server JWT under the issuer (the broker's own identity on an Organization Issuer network). */
export async function writeServerJwt(choria: string, o: ClientJwtOptions): Promise<void> {
  try {
    await run(choria, ['jwt', 'server', o.file, o.identity, o.publicKey, o.signingKey], { timeout: 30_000 });
  } catch (err) {
    throw new Error(
      `could not write the server JWT ${o.file} with ${choria} jwt server: ` +
        `${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}
