// Starts a real nats-server for integration tests: a free loopback port, JetStream in a temp store
// dir, optional extra configuration text; stopped by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface NatsServerOptions {
  /** enable JetStream (default true) */
  jetstream?: boolean;
  /** extra nats-server configuration text (accounts, tls, ...) appended to the generated config */
  config?: string;
  /** fixed port (default: a free one) */
  port?: number;
  /**
   * the account layout of a Choria Broker (see choriaBrokerAccounts): JetStream only in the choria
   * account, where unauthenticated connections land (as a client certificate without a user does);
   * the provisioner and the provisioning-mode nodes log in to the provisioning account
   */
  choriaAccounts?: boolean;
}

/** Logins of a broker started with `choriaAccounts` (all in the provisioning account). */
export const CHORIA_BROKER_LOGINS = {
  /** the provisioner, as a Choria Broker's `plugin.choria.network.provisioning.client_password` admits it */
  provisioner: { user: 'provisioner', password: 'provisioner-secret' },
  /** provisioning-mode servers (a Choria Broker admits them by their provisioning token) */
  node: { user: 'node', password: 'node-secret' },
  /** a client of the choria account granted Choria Streams as a user, not an admin (`--stream-user`) */
  streamsUser: { user: 'streams-user', password: 'streams-user-secret' },
} as const;

/**
 * What a Choria Broker lets a Streams user (not an admin) publish: JetStream's read, consume and
 * key-value subjects, but no stream creation or deletion.
 */
const STREAMS_USER_PUBLISH = [
  '$JS.API.INFO',
  '$JS.API.STREAM.NAMES',
  '$JS.API.STREAM.LIST',
  '$JS.API.STREAM.INFO.*',
  '$JS.API.STREAM.MSG.GET.*',
  '$JS.API.DIRECT.GET.*',
  '$JS.API.DIRECT.GET.*.>',
  '$JS.API.CONSUMER.CREATE.*',
  '$JS.API.CONSUMER.CREATE.*.>',
  '$JS.API.CONSUMER.DURABLE.CREATE.*.*',
  '$JS.API.CONSUMER.DELETE.*.*',
  '$JS.API.CONSUMER.INFO.*.*',
  '$JS.API.CONSUMER.MSG.NEXT.*.*',
  '$JS.ACK.>',
  '$JS.FC.>',
  '$KV.>',
  '_INBOX.>',
];

/**
 * How a test's own connection (a tap on the provisioning traffic, a publisher of events) logs in
 * to `s` so that it sees what the provisioner and the nodes see: the provisioning account's node
 * login on a Choria Broker layout, nothing otherwise.
 */
export function provisioningLogin(s: { readonly choriaAccounts: boolean }): { user?: string; pass?: string } {
  return s.choriaAccounts ? { user: CHORIA_BROKER_LOGINS.node.user, pass: CHORIA_BROKER_LOGINS.node.password } : {};
}

/**
 * The accounts a Choria Broker sets up when provisioning is enabled, as nats-server configuration:
 * - `choria`: Choria Streams (JetStream); it imports the provisioning account's lifecycle events
 *   and exports to it only the leader election bucket's stream info and the `provisioner` key;
 * - `provisioning`: no JetStream; it imports those two, the stream info under the
 *   `choria.streams` API prefix and the key under both its own name and that prefix.
 * Unauthenticated connections land in the choria account.
 */
export function choriaBrokerAccounts(): string {
  const { provisioner, node, streamsUser } = CHORIA_BROKER_LOGINS;
  const streamsUserPublish = STREAMS_USER_PUBLISH.map((x) => JSON.stringify(x)).join(', ');
  return [
    'accounts {',
    '  choria {',
    '    jetstream: enabled',
    '    users: [',
    '      { user: "choria-default", password: "unused-default-login" }',
    `      { user: "${streamsUser.user}", password: "${streamsUser.password}", ` +
      `permissions: { publish: { allow: [ ${streamsUserPublish} ] }, subscribe: { allow: ">" } } }`,
    '    ]',
    '    exports: [',
    '      { service: "$JS.API.STREAM.INFO.KV_CHORIA_LEADER_ELECTION", ' +
      'response_type: singleton, accounts: [provisioning] }',
    '      { service: "$KV.CHORIA_LEADER_ELECTION.provisioner", response_type: singleton, accounts: [provisioning] }',
    '    ]',
    '    imports: [ { stream: { account: provisioning, subject: "choria.lifecycle.>" } } ]',
    '  }',
    '  provisioning {',
    `    users: [ { user: "${provisioner.user}", password: "${provisioner.password}" }, ` +
      `{ user: "${node.user}", password: "${node.password}" } ]`,
    '    exports: [ { stream: "choria.lifecycle.>", accounts: [choria] } ]',
    '    imports: [',
    '      { service: { account: choria, subject: "$JS.API.STREAM.INFO.KV_CHORIA_LEADER_ELECTION" }, ' +
      'to: "choria.streams.STREAM.INFO.KV_CHORIA_LEADER_ELECTION" }',
    '      { service: { account: choria, subject: "$KV.CHORIA_LEADER_ELECTION.provisioner" } }',
    '      { service: { account: choria, subject: "$KV.CHORIA_LEADER_ELECTION.provisioner" }, ' +
      'to: "choria.streams.$KV.CHORIA_LEADER_ELECTION.provisioner" }',
    '    ]',
    '  }',
    '}',
    'no_auth_user: "choria-default"',
  ].join('\n');
}

export interface RunningNatsServer {
  url: string;
  /** started with the Choria Broker's account layout (CHORIA_BROKER_LOGINS log in to it) */
  choriaAccounts: boolean;
  port: number;
  pid: number;
  storeDir: string;
  /** stop the server (SIGTERM, then SIGKILL) and remove its store dir unless keepStore */
  stop(opts?: { keepStore?: boolean }): Promise<void>;
  /** kill -9 without cleanup, then start again on the same port and store dir */
  restart(): Promise<void>;
}

export function natsServerBin(): string {
  return process.env['NATS_SERVER_BIN'] ?? 'nats-server';
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        reject(new Error('could not determine a free port'));
        return;
      }
      const port = addr.port;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, deadlineMs: number): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = tcpConnect({ host: '127.0.0.1', port }, () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nats-server did not listen on 127.0.0.1:${port} within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startNatsServer(opts: NatsServerOptions = {}): Promise<RunningNatsServer> {
  const port = opts.port ?? (await freePort());
  const storeDir = mkdtempSync(join(tmpdir(), 'cpts-nats-'));
  const confFile = join(storeDir, 'server.conf');
  const js = opts.jetstream ?? true;
  const conf = [
    `listen: "127.0.0.1:${port}"`,
    js || opts.choriaAccounts === true ? `jetstream { store_dir: ${JSON.stringify(join(storeDir, 'js'))} }` : '',
    opts.choriaAccounts === true ? choriaBrokerAccounts() : '',
    opts.config ?? '',
  ].join('\n');
  writeFileSync(confFile, conf);

  let child: ChildProcess;
  let stderr = '';
  const launch = async (): Promise<void> => {
    stderr = '';
    child = spawn(natsServerBin(), ['-c', confFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d: Buffer) => {
      if (stderr.length < 20_000) stderr += d.toString();
    });
    const exited = new Promise<never>((_, reject) => {
      child.once('exit', (code) => reject(new Error(`nats-server exited with ${code}: ${stderr}`)));
      child.once('error', (err) => reject(new Error(`could not start ${natsServerBin()}: ${err.message}`)));
    });
    exited.catch(() => undefined);
    await Promise.race([waitForPort(port, 10_000), exited]);
  };
  await launch();

  const kill = async (signal: NodeJS.Signals): Promise<void> => {
    const c = child;
    if (c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill(signal);
    const timer = setTimeout(() => c.kill('SIGKILL'), 5_000);
    await gone;
    clearTimeout(timer);
  };

  return {
    url: `nats://127.0.0.1:${port}`,
    choriaAccounts: opts.choriaAccounts === true,
    port,
    get pid() {
      return child.pid ?? -1;
    },
    storeDir,
    async stop(o = {}) {
      await kill('SIGTERM');
      if (o.keepStore !== true) rmSync(storeDir, { recursive: true, force: true });
    },
    async restart() {
      await kill('SIGKILL');
      await launch();
    },
  };
}

/**
 * The stream of the leader-election bucket as a Choria Broker sets it up (a 5 s TTL, one message
 * per key, rollups, no deletes), on `url`.
 */
export async function addElectionBucket(url: string): Promise<void> {
  const { connect } = await import('nats');
  const nc = await connect({ servers: url });
  try {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({
      name: 'KV_CHORIA_LEADER_ELECTION',
      subjects: ['$KV.CHORIA_LEADER_ELECTION.>'],
      max_age: 5_000_000_000,
      max_msgs_per_subject: 1,
      allow_rollup_hdrs: true,
      deny_delete: true,
    });
  } finally {
    await nc.close();
  }
}
