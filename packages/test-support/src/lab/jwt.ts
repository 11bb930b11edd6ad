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
  const args = ['jwt', 'provisioning', o.file, o.signingKey, '--token', o.token ?? LAB_TOKEN, '--urls', o.urls.join(',')];
  if (o.provisionByDefault === true) args.push('--default');
  if (o.allowUpdate === true) args.push('--upgrade');
  if (o.protocolV2 === true) args.push('--protocol-v2');
  if (o.org !== undefined) args.push('--org', o.org);
  try {
    await run(choria, args, { timeout: 30_000 });
  } catch (err) {
    const detail = err instanceof Error && 'stderr' in err ? String((err as { stderr: unknown }).stderr).trim() : String(err);
    throw new Error(`could not write the provisioning JWT ${o.file} with ${choria} jwt provisioning: ${detail}`, { cause: err });
  }
}
