// Choria Streams set up as an operator would with go-choria's own CLI: a key-value bucket made
// ahead of time by a Streams admin, for a client that may only use buckets (`--stream-user`).
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface AdminBucketOptions {
  /** the Choria client configuration the admin connects with */
  readonly configFile: string;
  /** its identity: a choria-provider client takes it from $USER */
  readonly identity: string;
  readonly bucket: string;
  /** go duration, e.g. 168h */
  readonly ttl: string;
}

/** Writes a choria-provider (Organization Issuer) client configuration. */
export function writeIssuerClientConfig(
  file: string,
  o: { identity: string; brokerUrl: string; tokenFile: string; seedFile: string },
): void {
  const lines = [
    `identity = ${o.identity}`,
    `plugin.choria.middleware_hosts = ${o.brokerUrl}`,
    'plugin.security.provider = choria',
    `plugin.security.choria.token_file = ${o.tokenFile}`,
    `plugin.security.choria.seed_file = ${o.seedFile}`,
    '',
  ];
  writeFileSync(file, lines.join('\n'));
}

/** `choria kv add`: one value a key, the TTL given. */
export async function createBucketAsAdmin(choria: string, o: AdminBucketOptions): Promise<void> {
  const args = ['kv', 'add', o.bucket, '--history', '1', '--ttl', o.ttl, '--replicas', '1', '--config', o.configFile];
  try {
    await run(choria, args, { timeout: 30_000, env: { ...process.env, USER: o.identity } });
  } catch (err) {
    const detail =
      err instanceof Error && 'stderr' in err
        ? String((err as { stderr: unknown }).stderr).trim() || err.message
        : String(err);
    throw new Error(`could not create the bucket ${o.bucket} with ${choria} kv add: ${detail}`, { cause: err });
  }
}
