// Real go-choria servers, one process each in its own directory, under a restart loop (a server
// that loses the broker during its own start-up exits, as it would under systemd). Each runs in
// its own UTS and mount namespace (we run as root): the hostname gives it its identity, because
// in provisioning mode go-choria replaces any configuration file by defaults; and the fleet's
// provisioning.jwt is bind-mounted over the path compiled into the binary, so fleets (and rows)
// with different JWTs can run side by side.
import { existsSync, linkSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sleep } from '../wait.js';
import type { LabPki } from './pki.js';
import { startLabProcess, type LabProcess } from './processes.js';

export interface FleetOptions {
  readonly choria: string;
  /** the provisioning JWT path compiled into the binary (paths.compiledJwtFile) */
  readonly compiledJwt: string;
  /** this fleet's provisioning.jwt, mounted over compiledJwt for every server */
  readonly jwtFile: string;
  readonly pki: LabPki;
  /** the nodes' parent directory: a node lives in <nodesDir>/<identity> (the lab helper relies on it) */
  readonly nodesDir: string;
  /** identities are <prefix>-<nnn>.lab.example */
  readonly prefix: string;
  readonly count: number;
  /** start with a configuration file that asks for provisioning (else none: needs a `--default` JWT) */
  readonly withConfig: boolean;
  /** what the lab helper gives these nodes after provisioning */
  readonly afterProvisioning: {
    /** the provisioned servers' middleware_hosts */
    readonly brokerUrls: readonly string[];
    /** sign the node's CSR with the lab CA (the pki row) instead of using the throw-away pair */
    readonly signCsr?: boolean;
    /** extra reply fields for the helper (action_policies, opa_policies, upgrade, ...) */
    readonly reply?: Readonly<Record<string, unknown>>;
    /** extra configuration for the node */
    readonly configuration?: Readonly<Record<string, string>>;
    /** the helper defers the first this many runs for each node */
    readonly deferRuns?: number;
    /** protocol v2: the node keeps the ed25519 seed and server JWT the provisioner gave it */
    readonly protocolV2?: boolean;
    /** signCsr: how long the certificates the lab CA signs stay valid (default 7 days) */
    readonly certValidityMs?: number;
  };
}

/** What the lab helper reads for a node: <nodeDir>/lab-node.json. */
export interface LabNodeFile {
  readonly identity: string;
  readonly brokerUrls: string;
  readonly statusFile: string;
  readonly presetSsl: string;
  readonly caFile: string;
  readonly caKeyFile: string;
  readonly signCsr: boolean;
  readonly reply: Readonly<Record<string, unknown>>;
  readonly configuration: Readonly<Record<string, string>>;
  readonly deferRuns: number;
  readonly protocolV2: boolean;
  readonly certValidityMs: number;
}

export interface ServerState {
  readonly identity: string;
  /** left provisioning mode and connected to a broker with its new configuration */
  readonly provisioned: boolean;
  /** how often its configuration file was rewritten by a configure request */
  readonly configures: number;
  /** how often the lab helper ran for it */
  readonly helperRuns: number;
  /** the provisioner instances that ran the helper for it (their names) */
  readonly helperRunBy: readonly string[];
  /** the go-choria version it last started as (its log) */
  readonly version: string | undefined;
}

export interface LabFleet {
  readonly identities: readonly string[];
  nodeDir(identity: string): string;
  /** starts every server (or the given ones) */
  start(identities?: readonly string[]): Promise<void>;
  /** stops every server (or the given ones): the server and its restart loop */
  stop(identities?: readonly string[]): Promise<void>;
  state(identity: string): ServerState;
  states(): ServerState[];
}

export function labIdentity(prefix: string, i: number): string {
  return `${prefix}-${String(i).padStart(3, '0')}.lab.example`;
}

const LOOP = [
  'set -u',
  'hostname "$1"',
  'mount --bind "$2" "$3" || { echo "lab: could not bind-mount $2 over $3"; exit 1; }',
  'while :; do "$4" server run --config "$5"; echo "lab: choria server exited with status $?"; sleep 1; done',
].join('\n');

function count(text: string, re: RegExp): number {
  return (text.match(re) ?? []).length;
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** go-choria's status file (plugin.choria.status_file_path), which the lab helper configures. */
function provisionedByStatus(file: string): boolean {
  try {
    const s = JSON.parse(readFileSync(file, 'utf8')) as { provisioning_mode?: unknown; connected_server?: unknown };
    return (
      s.provisioning_mode === false &&
      typeof s.connected_server === 'string' &&
      s.connected_server.includes('127.0.0.1')
    );
  } catch {
    // not written yet, or caught mid-write
    return false;
  }
}

function lastVersion(log: string): string | undefined {
  const all = [...log.matchAll(/Choria Server version (\S+) starting/g)];
  return all.at(-1)?.[1];
}

export async function createFleet(o: FleetOptions): Promise<LabFleet> {
  mkdirSync(o.nodesDir, { recursive: true });
  // the bind mount needs something to mount over
  mkdirSync(dirname(o.compiledJwt), { recursive: true });
  if (!existsSync(o.compiledJwt)) writeFileSync(o.compiledJwt, '');
  const identities = Array.from({ length: o.count }, (_, i) => labIdentity(o.prefix, i + 1));
  const nodeDir = (id: string): string => join(o.nodesDir, id);
  const procs = new Map<string, LabProcess>();

  await Promise.all(
    identities.map(async (id) => {
      const dir = nodeDir(id);
      mkdirSync(dir, { recursive: true });
      // its own copy of the executable: an upgrade replaces the running file
      const bin = join(dir, 'choria');
      if (!existsSync(bin)) {
        try {
          linkSync(o.choria, bin);
        } catch {
          copyFileSync(o.choria, bin);
        }
      }
      const presetSsl = join(dir, 'preset-ssl');
      const pair = await o.pki.serverPair(id, presetSsl);
      if (o.withConfig) {
        const conf = [
          `identity = ${id}`,
          'plugin.choria.server.provision = true',
          'plugin.security.provider = file',
          `plugin.security.file.certificate = ${pair.certFile}`,
          `plugin.security.file.key = ${pair.keyFile}`,
          `plugin.security.file.ca = ${join(presetSsl, 'ca.pem')}`,
        ];
        writeFileSync(join(dir, 'server.conf'), `${conf.join('\n')}\n`);
      }
      const a = o.afterProvisioning;
      const node: LabNodeFile = {
        identity: id,
        brokerUrls: a.brokerUrls.join(','),
        statusFile: join(dir, 'status.json'),
        presetSsl,
        caFile: o.pki.caFile,
        caKeyFile: o.pki.caKeyFile,
        signCsr: a.signCsr === true,
        reply: a.reply ?? {},
        configuration: a.configuration ?? {},
        deferRuns: a.deferRuns ?? 0,
        protocolV2: a.protocolV2 === true,
        certValidityMs: a.certValidityMs ?? 7 * 86_400_000,
      };
      writeFileSync(join(dir, 'lab-node.json'), JSON.stringify(node, null, 2));
    }),
  );

  const state = (id: string): ServerState => {
    const dir = nodeDir(id);
    const log = readText(join(dir, 'server.log'));
    const helper = readText(join(dir, 'helper.log'));
    return {
      identity: id,
      provisioned: provisionedByStatus(join(dir, 'status.json')),
      configures: count(log, /Rewriting configuration file/g),
      helperRuns: count(helper, /\n/g),
      helperRunBy: [...new Set(helper.split('\n').flatMap((l) => l.split(' ').slice(2, 3)))],
      version: lastVersion(log),
    };
  };

  return {
    identities,
    nodeDir,
    async start(ids = identities) {
      for (const id of ids) {
        if (procs.get(id)?.gone() === false) continue;
        const dir = nodeDir(id);
        const args = [
          '--uts',
          '--mount',
          '--',
          'bash',
          '-c',
          LOOP,
          'lab-server',
          id,
          o.jwtFile,
          o.compiledJwt,
          join(dir, 'choria'),
          join(dir, 'server.conf'),
        ];
        procs.set(id, startLabProcess(`server ${id}`, 'unshare', args, { cwd: dir, logFile: join(dir, 'server.log') }));
        // a short stagger: a 2-core machine starting 50 Go processes at once stalls everything
        await sleep(15);
      }
    },
    async stop(ids = identities) {
      await Promise.all(ids.flatMap((id) => procs.get(id) ?? []).map((p) => p.stop('SIGTERM', 5_000)));
    },
    state,
    states: () => identities.map(state),
  };
}
