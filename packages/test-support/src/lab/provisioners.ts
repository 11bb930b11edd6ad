// The provisioners the lab runs against real servers: this project's CLI (`choria-provisioner run`,
// built in packages/cli/dist) and the upstream Go provisioner, both from the same provisioner YAML
// (the upstream keys; JSON is YAML) and Choria client configuration, both calling the lab helper.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../nats-server.js';
import { repoRoot } from '../vectors.js';
import { PROVISIONER_PASSWORD } from './broker.js';
import { LAB_TOKEN } from './jwt.js';
import type { LabPki } from './pki.js';
import { startLabProcess, type LabProcess } from './processes.js';

export type ProvisionerKind = 'ours' | 'upstream';

export const LAB_HELPER = join(repoRoot, 'packages', 'test-support', 'src', 'lab', 'lab-helper.mjs');
export const OUR_CLI = join(repoRoot, 'packages', 'cli', 'dist', 'bin.js');

export interface SiteSpec {
  readonly site: string;
  /** the brokers this site's provisioner connects to */
  readonly brokerUrls: readonly string[];
  readonly features?: {
    readonly pki?: boolean;
    readonly jwt?: boolean;
    readonly ed25519?: boolean;
    readonly upgrades?: boolean;
  };
  /** further provisioner YAML keys (leader_election, coordination, upgrades_repository, ...) */
  readonly yaml?: Readonly<Record<string, unknown>>;
  /** replaces the generated Choria client configuration (protocol v2) */
  readonly choriaConfig?: string;
}

export interface ProvisionerSpec {
  readonly kind: ProvisionerKind;
  readonly name: string;
  readonly dir: string;
  readonly pki: LabPki;
  /** the Choria identity and client certificate name (shared by instances that share one) */
  readonly identity: string;
  readonly nodesDir: string;
  readonly sites: readonly SiteSpec[];
  /** the upstream provisioner executable (kind upstream) */
  readonly upstreamBinary?: string;
  /** further environment (e.g. USER for a choria-provider client) */
  readonly env?: Readonly<Record<string, string>>;
}

export interface LabProvisioner {
  readonly kind: ProvisionerKind;
  readonly name: string;
  readonly pid: number;
  /** ours: the monitor port (/status, /metrics); upstream: 0 */
  readonly monitorPort: number;
  readonly logFile: string;
  gone(): boolean;
  stop(signal?: NodeJS.Signals): Promise<void>;
  log(): string;
  /** ours only: the /status JSON */
  status(): Promise<unknown>;
}

async function clientConfig(spec: ProvisionerSpec, site: SiteSpec): Promise<string> {
  if (site.choriaConfig !== undefined) return site.choriaConfig;
  const pair = await spec.pki.client(spec.identity);
  return [
    `identity = ${spec.identity}`,
    `plugin.choria.middleware_hosts = ${site.brokerUrls.join(',')}`,
    'plugin.security.provider = file',
    `plugin.security.file.certificate = ${pair.certFile}`,
    `plugin.security.file.key = ${pair.keyFile}`,
    `plugin.security.file.ca = ${spec.pki.caFile}`,
    '',
  ].join('\n');
}

function upstreamBinary(spec: ProvisionerSpec): string {
  if (spec.upstreamBinary === undefined)
    throw new Error(`${spec.name}: no upstream provisioner binary given (upstreamBinary)`);
  return spec.upstreamBinary;
}

export async function startProvisioner(spec: ProvisionerSpec): Promise<LabProvisioner> {
  mkdirSync(spec.dir, { recursive: true });
  if (spec.kind === 'upstream' && spec.sites.length !== 1)
    throw new Error(`the upstream provisioner runs one site per process, ${spec.name} was given ${spec.sites.length}`);
  const monitorPort = spec.kind === 'ours' ? await freePort() : 0;
  const logFile = join(spec.dir, `${spec.name}.log`);
  const configs: string[] = [];
  let choriaFile = '';
  for (const site of spec.sites) {
    choriaFile = join(spec.dir, `${spec.name}-${site.site}-choria.cfg`);
    writeFileSync(choriaFile, await clientConfig(spec, site));
    const yaml: Record<string, unknown> = {
      workers: 4,
      interval: '1m',
      // upstream treats logfile as a path (its default "info" is a file name); ours takes "stdout"
      logfile: spec.kind === 'ours' ? 'stdout' : join(spec.dir, `${spec.name}-${site.site}.log`),
      loglevel: 'info',
      helper: LAB_HELPER,
      token: LAB_TOKEN,
      site: site.site,
      monitor_port: monitorPort,
      choria_insecure: false,
      broker_provisioning_password: PROVISIONER_PASSWORD,
      jwt_verify_cert: spec.pki.signer.certFile,
      features: { jwt: true, ...site.features },
      ...(spec.kind === 'ours' ? { choria_config: choriaFile } : {}),
      ...site.yaml,
    };
    // one file per instance: instances of one site differ in their monitor port
    const file = join(spec.dir, `${spec.name}-${site.site}.yaml`);
    writeFileSync(file, JSON.stringify(yaml, null, 2));
    configs.push(file);
  }
  const env = { ...process.env, LAB_NODES_DIR: spec.nodesDir, LAB_INSTANCE: spec.name, ...spec.env };
  const proc: LabProcess =
    spec.kind === 'ours'
      ? startLabProcess(
          spec.name,
          process.execPath,
          [OUR_CLI, 'run', ...configs.flatMap((c) => ['--config', c]), '--monitor-address', '127.0.0.1'],
          { logFile, env, cwd: spec.dir },
        )
      : startLabProcess(
          spec.name,
          upstreamBinary(spec),
          ['run', '--config', configs[0] ?? '', '--choria-config', choriaFile],
          { logFile, env, cwd: spec.dir },
        );
  const upstreamLog =
    spec.kind === 'upstream' ? join(spec.dir, `${spec.name}-${spec.sites[0]?.site ?? ''}.log`) : undefined;
  return {
    kind: spec.kind,
    name: spec.name,
    pid: proc.pid,
    monitorPort,
    logFile,
    gone: () => proc.gone(),
    stop: (signal = 'SIGTERM') => proc.stop(signal, 10_000),
    log() {
      const read = (f: string): string => {
        try {
          return readFileSync(f, 'utf8');
        } catch {
          return '';
        }
      };
      return read(logFile) + (upstreamLog === undefined ? '' : read(upstreamLog));
    },
    async status() {
      if (spec.kind !== 'ours') throw new Error(`${spec.name}: the upstream provisioner has no /status`);
      const res = await fetch(`http://127.0.0.1:${monitorPort}/status`);
      if (!res.ok) throw new Error(`${spec.name}: GET /status answered ${res.status}`);
      return (await res.json()) as unknown;
    },
  };
}
