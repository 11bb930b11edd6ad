// A real Choria Broker (`choria broker run`) on loopback ports: a TLS client listener with the lab
// CA, the provisioning account (client_password + signer_cert) and Choria Streams in its own store
// directory. Every stream replica setting is 1: left at its default the broker waits a random
// 10-69 s before it creates its streams (and so the leader election bucket).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../nats-server.js';
import { sleep } from '../wait.js';
import { BROKER_IDENTITY, type LabPki } from './pki.js';
import { startLabProcess, type LabProcess } from './processes.js';

export const PROVISIONER_PASSWORD = 'lab-provisioner-secret';

export interface BrokerOptions {
  readonly choria: string;
  readonly dir: string;
  readonly pki: LabPki;
  /** leader election TTL (default 10s: a fail-over in seconds instead of a minute) */
  readonly electionTtl?: string;
  /** the other brokers of a cluster: their cluster (peer) ports */
  readonly peers?: readonly number[];
  readonly clientPort?: number;
  readonly peerPort?: number;
  /** stream replicas (default 1) */
  readonly replicas?: number;
  /**
   * An Organization Issuer network (protocol v2): the broker trusts JWTs issued under this issuer
   * (name and ed25519 public key, hex) and keeps its x509 pair only for its TLS listener
   */
  readonly issuer?: {
    readonly name: string;
    readonly publicKey: string;
    /** the broker's own server JWT under the issuer and its seed (go-choria insists on both) */
    readonly tokenFile: string;
    readonly seedFile: string;
  };
  /** extra configuration lines (later keys win) */
  readonly extra?: string;
  readonly name?: string;
}

export interface LabBroker {
  readonly name: string;
  readonly port: number;
  readonly peerPort: number;
  /** tls://127.0.0.1:<port> */
  readonly url: string;
  readonly configFile: string;
  readonly logFile: string;
  pid(): number | undefined;
  /** starts it and waits for the client port */
  start(): Promise<void>;
  /** SIGTERM (SIGKILL with `kill`), waits until the process group is gone */
  stop(opts?: { kill?: boolean }): Promise<void>;
  log(): string;
}

const STREAM_REPLICAS = ['event', 'machine', 'leader_election', 'advisory', 'executor'] as const;

function brokerConfig(o: BrokerOptions, port: number, peerPort: number): string {
  const { pki } = o;
  const replicas = String(o.replicas ?? 1);
  const lines = [
    // brokers of one cluster need names of their own (the certificate may stay shared)
    `identity = ${o.name === undefined ? BROKER_IDENTITY : `${o.name}.${BROKER_IDENTITY}`}`,
    'loglevel = info',
    'plugin.choria.broker_network = true',
    'plugin.choria.network.listen_address = 127.0.0.1',
    `plugin.choria.network.client_port = ${port}`,
    `plugin.choria.network.peer_port = ${peerPort}`,
    ...(o.peers !== undefined && o.peers.length > 0
      ? [`plugin.choria.network.peers = ${o.peers.map((p) => `nats://127.0.0.1:${p}`).join(',')}`]
      : []),
    'plugin.choria.stats_port = 0',
    ...(o.issuer === undefined
      ? [
          'plugin.security.provider = file',
          `plugin.security.file.certificate = ${pki.broker.certFile}`,
          `plugin.security.file.key = ${pki.broker.keyFile}`,
          `plugin.security.file.ca = ${pki.caFile}`,
          `plugin.choria.network.provisioning.signer_cert = ${pki.signer.certFile}`,
        ]
      : [
          'plugin.security.provider = choria',
          `plugin.security.issuer.names = ${o.issuer.name}`,
          `plugin.security.issuer.${o.issuer.name}.public = ${o.issuer.publicKey}`,
          `plugin.security.choria.certificate = ${pki.broker.certFile}`,
          `plugin.security.choria.key = ${pki.broker.keyFile}`,
          `plugin.security.choria.token_file = ${o.issuer.tokenFile}`,
          `plugin.security.choria.seed_file = ${o.issuer.seedFile}`,
        ]),
    `plugin.choria.network.provisioning.client_password = ${PROVISIONER_PASSWORD}`,
    'plugin.choria.network.system.user = system',
    'plugin.choria.network.system.password = lab-system-secret',
    `plugin.choria.network.stream.store = ${join(o.dir, 'streams')}`,
    `plugin.choria.network.stream.leader_election_ttl = ${o.electionTtl ?? '10s'}`,
    ...STREAM_REPLICAS.map((s) => `plugin.choria.network.stream.${s}_replicas = ${replicas}`),
    o.extra ?? '',
  ];
  return `${lines.join('\n')}\n`;
}

async function listening(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = tcpConnect({ host: '127.0.0.1', port }, () => {
      s.end();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export async function createBroker(o: BrokerOptions): Promise<LabBroker> {
  mkdirSync(o.dir, { recursive: true });
  const port = o.clientPort ?? (await freePort());
  const peerPort = o.peerPort ?? (await freePort());
  const name = o.name ?? 'broker';
  const configFile = join(o.dir, 'broker.conf');
  const logFile = join(o.dir, 'broker.log');
  writeFileSync(configFile, brokerConfig(o, port, peerPort));
  let proc: LabProcess | undefined;
  return {
    name,
    port,
    peerPort,
    url: `tls://127.0.0.1:${port}`,
    configFile,
    logFile,
    pid: () => (proc !== undefined && !proc.gone() ? proc.pid : undefined),
    async start() {
      if (proc !== undefined && !proc.gone()) throw new Error(`broker ${name} (pid ${proc.pid}) is already running`);
      const p = startLabProcess(name, o.choria, ['broker', 'run', '--config', configFile], { logFile, cwd: o.dir });
      proc = p;
      const deadline = Date.now() + 30_000;
      while (!(await listening(port))) {
        if (p.gone())
          throw new Error(
            `broker ${name} exited during start-up; its log ${logFile} ends with: ` +
              `${readFileSync(logFile, 'utf8').slice(-2000)}`,
          );
        if (Date.now() > deadline)
          throw new Error(`broker ${name} did not listen on 127.0.0.1:${port} within 30 s (log: ${logFile})`);
        await sleep(100);
      }
    },
    async stop(opts = {}) {
      await proc?.stop(opts.kill === true ? 'SIGKILL' : 'SIGTERM', 10_000);
    },
    log: () => readFileSync(logFile, 'utf8'),
  };
}
