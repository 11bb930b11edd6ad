// Nothing secret leaves the process (issue 41). A corpus of secret-bearing helper outputs — broken
// JSON, valid JSON whose configure go-choria would refuse, stderr with secrets in every form the
// redactor knows, a reply carrying a server JWT and a seed, a helper that echoes its request, one
// that times out half-way through its reply, a defer message with a token — runs against two
// sites of simulated nodes (a one-process-per-node helper and a pool helper). Then every endpoint
// of the monitor port (/status and /nodes with and without the token, /metrics, /healthz,
// /readyz, the status page's HTML) and the provisioner's log at every level must hold none of the
// secrets, and the monitor port none of the text the helpers printed (a defer's message included);
// the log has the redacted text for the operator.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLogger,
  monitorRoutes,
  startMonitorServer,
  type MonitorServer,
  type Provisioner,
} from '../../packages/core/src/index.js';
import { FleetHarness } from '@choria-provisioner/test-support/fleet';
import { until } from '@choria-provisioner/test-support/wait';

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const jwt = (sub: string, signature: string): string =>
  `${b64({ alg: 'EdDSA', typ: 'JWT' })}.${b64({ sub, purpose: 'choria_server' })}.${signature}`;
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const NKEY_SEED = `SU${Array.from({ length: 56 }, (_, i) => BASE32[(i * 7 + 3) % 32]).join('')}`;

/** Every secret of the corpus; none may appear on the monitor port or in the log. */
const S = {
  clientPassword: 'hunter2-Q4v9xL',
  choriaSeed: 'deadbeef0c0ffee15eed',
  pemBody: 'MHcCAQEEIPr1vAteKeyMaterial0x',
  stderrPassword: 'hunter3-Lm2P8k',
  upperPassword: 'Tr0ub4dor-3xZ',
  envSeed: 'c0ffeec0ffee5eed77',
  bearer: 'brr-Vq71ZzKa9',
  jsonToken: 'tok-Hx83Jd0q',
  apiKey: 'ak-93jdKq0pW',
  urlPassword: 'urlpass-K2m9x',
  bareJwtSignature: 'c2lnLWJhcmUtand0LXNpZ25hdHVyZQ',
  nkeySeed: NKEY_SEED,
  systemPassword: 'hunter5-Pq0z3',
  natsPass: 'natspass-R7t2w',
  policyToken: 'tok3-Yw8e1aQ',
  serverJwtSignature: 'c2VydmVyLWp3dC1zaWduYXR1cmUtc2VjcmV0',
  replySeed: '5eedZk3m8q1vv',
  factPassword: 'factpass-J3k8u',
  keyPemBody: 'MIIkeyTwoMaterialQ9',
  timeoutPassword: 'timeout-pw-9Xq',
  deferToken: 'tok4-Lz0p2mQ',
  deferJwtSignature: 'ZGVmZXItand0LXNpZ25hdHVyZQ',
  okPassword: 'okpass-W2q8rT',
  okStderrPassword: 'okerr-N4b7vD',
};

/** Text the helpers print that is not secret: it may reach the log, never the monitor port. */
const MARKER_OUT = 'marker-out-6f2c';
const MARKER_ERR = 'marker-err-91ad';

interface Entry {
  /** what it stands for */
  readonly what: string;
  readonly stdout?: string;
  readonly stderr?: string;
  readonly exit?: number;
  /** seconds to sleep after printing stdout (past helper_timeout) */
  readonly sleep?: number;
  /** print the request it read to stderr first */
  readonly echoRequest?: boolean;
}

const PEM = `-----BEGIN EC PRIVATE KEY-----\n${S.pemBody}\n-----END EC PRIVATE KEY-----\n`;
const middleware = `"plugin.choria.middleware_hosts":"nats://${MARKER_OUT}.example.net:4222"`;

/** node-<n>.example.net gets entry n-1. */
const CORPUS: readonly Entry[] = [
  {
    what: 'the issue: broken JSON with a password and a seed, a private key and a password on stderr',
    stdout: `{"defer":false,"configuration":{"plugin.choria.network.provisioning.client_password":"${S.clientPassword}","plugin.security.choria.seed":"${S.choriaSeed}",${middleware}} BROKEN\n`,
    stderr: `${MARKER_ERR}: loading the CA key\n${PEM}password=${S.stderrPassword}\n`,
  },
  {
    what: 'stderr with secrets in every form, exit 1',
    stdout: `{${middleware}}`,
    stderr: [
      `${MARKER_ERR} starting`,
      `PASSWORD: ${S.upperPassword}`,
      `export CHORIA_SEED='${S.envSeed}'`,
      `Authorization: Bearer ${S.bearer}`,
      `response {"token": "${S.jsonToken}", "ok": false}`,
      `api_key=${S.apiKey} user=bob`,
      `connecting to nats://provisioner:${S.urlPassword}@broker.example.net:4222`,
      `signed ${jwt('node-2', S.bareJwtSignature)}`,
      `nkey ${S.nkeySeed}`,
      '',
    ].join('\n'),
    exit: 1,
  },
  {
    what: 'valid JSON go-choria refuses: a password that is not a string',
    stdout: `{"configuration":{"plugin.choria.server.provision":"false","plugin.choria.network.system.password":["${S.systemPassword}"],${middleware}}}`,
  },
  {
    what: 'valid JSON go-choria refuses: a policy file named with a token',
    stdout: `{"configuration":{"plugin.choria.server.provision":"false","plugin.nats.pass":"${S.natsPass}",${middleware}},"action_policies":{"token=${S.policyToken}":"policy default allow"}}`,
  },
  {
    what: 'a reply with a server JWT and a seed, exit 1',
    stdout: `{"configuration":{"plugin.choria.server.provision":"false","plugin.choria.security.server.jwt":"${jwt('node-5', S.serverJwtSignature)}","plugin.security.choria.seed":"${S.replySeed}",${middleware}}}`,
    stderr: `${MARKER_ERR} using seed: ${S.replySeed}\n`,
    exit: 1,
  },
  {
    what: 'a helper that echoes its request (with a password among the facts) and exits 2',
    echoRequest: true,
    stderr: `\n${MARKER_ERR}\n`,
    exit: 2,
  },
  {
    what: 'a reply with a private key, exit 3',
    stdout: `{"key":"-----BEGIN EC PRIVATE KEY-----\\n${S.keyPemBody}\\n-----END EC PRIVATE KEY-----\\n","configuration":{"plugin.choria.server.provision":"false",${middleware}}}`,
    exit: 3,
  },
  {
    what: 'half a reply, then past the time limit',
    stdout: `{"configuration":{${middleware},"plugin.nats.pass":"${S.timeoutPassword}"`,
    sleep: 4,
  },
  {
    what: 'a defer whose message carries a token and a JWT',
    stdout: `{"defer":true,"msg":"waiting for the CA; token=${S.deferToken} ${jwt('node-9', S.deferJwtSignature)}"}`,
  },
  {
    what: 'a good reply with a password, and a password on stderr',
    stdout: `{"configuration":{"plugin.choria.server.provision":"false","plugin.choria.network.provisioning.client_password":"${S.okPassword}",${middleware}}}`,
    stderr: `${MARKER_ERR} password=${S.okStderrPassword}\n`,
  },
];

/** One process per node: prints what the corpus says for the node's identity. */
const PROCESS_HELPER = `#!/bin/sh
request=$(cat)
identity=$(printf '%s\\n' "$request" | sed -n 's/^{"identity":"\\([^"]*\\)".*/\\1/p')
dir=$(dirname "$0")/corpus
[ -f "$dir/$identity.echo" ] && printf '%s' "$request" >&2
[ -f "$dir/$identity.stderr" ] && cat "$dir/$identity.stderr" >&2
[ -f "$dir/$identity.stdout" ] && cat "$dir/$identity.stdout"
[ -f "$dir/$identity.sleep" ] && sleep "$(cat "$dir/$identity.sleep")"
exit "$(cat "$dir/$identity.exit" 2>/dev/null || echo 0)"
`;

/** A pool helper: one line per request; a failing entry prints its stdout without the newline, then exits. */
const POOL_HELPER = `import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const dir = new URL('./corpus/', import.meta.url).pathname;
const read = (id, ext) => (existsSync(dir + id + '.' + ext) ? readFileSync(dir + id + '.' + ext, 'utf8') : undefined);
for await (const line of createInterface({ input: process.stdin })) {
  const id = JSON.parse(line).identity;
  if (read(id, 'echo') !== undefined) process.stderr.write(line + '\\n');
  const err = read(id, 'stderr');
  if (err !== undefined) process.stderr.write(err);
  const exit = Number(read(id, 'exit') ?? '0');
  const sleep = Number(read(id, 'sleep') ?? '0');
  const out = (read(id, 'stdout') ?? '').replace(/\\n/g, ' ').trimEnd();
  process.stdout.write(exit !== 0 || sleep > 0 ? out : out + '\\n');
  if (sleep > 0) await new Promise((r) => setTimeout(r, sleep * 1000));
  if (exit !== 0) process.exit(exit);
}
`;

const TOKEN = 'corpus-api-t0ken';

describe('a corpus of secret-bearing helper outputs', () => {
  const h = new FleetHarness();
  let monitor: MonitorServer;
  let logFile: string;
  const sites: { site: string; p: Provisioner; token: string }[] = [];

  beforeAll(async () => {
    const dir = h.tempDir();
    mkdirSync(join(dir, 'corpus'));
    CORPUS.forEach((e, i) => {
      const id = `node-${i + 1}.example.net`;
      const file = (ext: string, text: string): void => writeFileSync(join(dir, 'corpus', `${id}.${ext}`), text);
      if (e.stdout !== undefined) file('stdout', e.stdout);
      if (e.stderr !== undefined) file('stderr', e.stderr);
      if (e.exit !== undefined) file('exit', String(e.exit));
      if (e.sleep !== undefined) file('sleep', String(e.sleep));
      if (e.echoRequest === true) file('echo', '');
    });
    const processHelper = join(dir, 'process-helper.sh');
    writeFileSync(processHelper, PROCESS_HELPER);
    chmodSync(processHelper, 0o755);
    const poolHelper = join(dir, 'pool-helper.mjs');
    writeFileSync(poolHelper, POOL_HELPER);

    logFile = join(dir, 'provisioner.log');
    const logger = createLogger({ logfile: logFile, loglevel: 'debug' });
    h.onCleanup(async () => void logger.close());
    const specs = [
      // the site lists its nodes only to its token; the corpus is read with the token too
      {
        site: 'proc',
        token: TOKEN,
        yaml: `helper: ${processHelper}\nhelper_timeout: 2s\nmonitor_api_token: ${TOKEN}\n`,
      },
      // no token: anyone reads the node list
      {
        site: 'pool',
        token: '',
        yaml: `helper: ${process.execPath} ${poolHelper}\nhelper_mode: pool\nhelper_pool_size: 2\nhelper_timeout: 2s\n`,
      },
    ];
    for (const spec of specs) {
      const s = await h.broker();
      const fleet = await h.fleet(s.url, {
        count: CORPUS.length,
        name: spec.site,
        facts: { mysql_root_password: S.factPassword, os: 'linux' },
      });
      await fleet.waitForBooted(20_000);
      const p = h.provisioner(s.url, `site: ${spec.site}\nworkers: 4\n${spec.yaml}`, {
        registry: new Registry(),
        helper: undefined,
        logger,
      });
      sites.push({ site: spec.site, p, token: spec.token });
    }
    const registry = new Registry();
    monitor = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry,
      ...monitorRoutes(sites.map((x) => x.p)),
    });
    h.onCleanup(() => monitor.close());
    for (const { p } of sites) await p.start();
    const done = (p: Provisioner): boolean => {
      const st = p.status({ limit: 100 });
      return (
        st.hosts.length === CORPUS.length &&
        st.hosts.every((x) => x.attempts >= 1 && !['queued', 'provisioning'].includes(x.state))
      );
    };
    const states = (): string =>
      sites
        .map(
          ({ site, p }) =>
            `${site}: ${p
              .status({ limit: 100 })
              .hosts.map((x) => `${x.identity} ${x.state} ${x.attempts}`)
              .join(', ')}`,
        )
        .join('; ');
    // the start's discovery offers every node once; a failed one waits for the next (minutes away)
    await until('every corpus node tried once on both sites', () => sites.every(({ p }) => done(p)), 60_000, {
      tick: () => (process.env['CORPUS_DEBUG'] !== undefined ? console.log(states()) : undefined),
      stepMs: 200,
    });
    // the log file is written asynchronously: wait for the last attempts' lines
    await until(
      'the log lines of every attempt',
      () =>
        CORPUS.every(
          (_, i) =>
            (readFileSync(logFile, 'utf8').match(new RegExp(`node-${i + 1}\\.example\\.net`, 'g')) ?? []).length >= 2,
        ),
      10_000,
    );
  }, 120_000);

  afterAll(() => h.cleanup(), 60_000);

  const get = async (path: string, token?: string): Promise<string> => {
    const res = await fetch(`${monitor.url}${path}`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    return `${path} (${res.status}):\n${await res.text()}`;
  };

  /** Every secret and marker found in `text`, by name. */
  const found = (text: string, what: Record<string, string>): string[] =>
    Object.entries(what).flatMap(([name, value]) => (text.includes(value) ? [name] : []));

  it('leaves no secret and no helper output on any endpoint of the monitor port', async () => {
    const bodies = [
      await get('/status'),
      await get('/status?limit=1000', TOKEN),
      await get('/nodes?site=proc&limit=500', TOKEN),
      await get('/nodes?site=proc&limit=500&sort=lastError'),
      await get('/nodes?site=pool&limit=500'),
      await get('/metrics'),
      await get('/healthz'),
      await get('/readyz'),
      // the status page: its HTML, and its data (the page reads /status?limit=10 and /nodes)
      await get('/'),
      await get('/status?limit=10', TOKEN),
      await get('/nodes?site=proc&sort=identity&order=asc&offset=0&limit=100', TOKEN),
    ].join('\n');
    expect(found(bodies, S)).toEqual([]);
    expect(
      found(bodies, {
        MARKER_OUT,
        MARKER_ERR,
        broken: 'BROKEN',
        pem: 'BEGIN EC PRIVATE KEY',
        deferMessage: 'waiting for the CA',
      }),
    ).toEqual([]);

    // what the monitor port says instead, in the provisioner's words
    const nodes = JSON.parse((await get('/nodes?site=proc&limit=500', TOKEN)).replace(/^.*\n/, '')) as {
      nodes: { identity: string; state: string; lastError?: string }[];
    };
    const byId = new Map(nodes.nodes.map((n) => [n.identity, n]));
    const lastError = (n: number): string => byId.get(`node-${n}.example.net`)?.lastError ?? '';
    expect(lastError(1)).toMatch(
      /: stdout is not valid JSON: \d+ bytes that are not JSON: `,` or `}` expected at position \d+; it printed \d+ bytes on stdout and \d+ bytes on stderr \(the text is in the log at debug level\)$/,
    );
    expect(lastError(2)).toMatch(
      /: exited with status 1 \(its reply is discarded[^)]*\); it printed \d+ bytes on stdout and \d+ bytes on stderr/,
    );
    expect(lastError(3)).toContain(
      'configuration["plugin.choria.network.system.password"] must be a string, got an array',
    );
    expect(lastError(4)).toMatch(/action_policies key <a key of \d+ characters> does not end in "\.policy"/);
    expect(lastError(8)).toMatch(/timed out after 2000 ms/);
    // a defer's message is the helper's own text too: the port says only that it deferred
    expect(byId.get('node-9.example.net')).toMatchObject({
      state: 'deferred',
      lastError: "configuration defered by the helper; its message is in the provisioner's log",
    });
    expect(byId.get('node-10.example.net')?.state).toBe('held');
  });

  it('leaves no secret in the log, at any level, and keeps the redacted text at debug level for the operator', () => {
    const entries = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: string; message: string });
    const at = (levels: string[]): string =>
      entries
        .filter((e) => levels.includes(e.level))
        .map((e) => `${e.level}: ${e.message}`)
        .join('\n');
    const aboveDebug = at(['info', 'warn', 'error']);
    expect(found(aboveDebug, S)).toEqual([]);
    expect(found(at(['debug']), S)).toEqual([]);
    // the helpers' stderr is logged (redacted) at info and warn; what they printed on stdout only at debug
    // (its line breaks shown as visible escapes: one log record, one line)
    expect(aboveDebug).toMatch(
      /Helper stderr for node-1\.example\.net: marker-err-91ad: loading the CA key\\u000a\[redacted\]\\u000apassword=\[redacted\]/,
    );
    expect(aboveDebug).toContain(`Helper stderr for node-10.example.net: ${MARKER_ERR} password=[redacted]`);
    expect(aboveDebug).not.toContain(MARKER_OUT);
    // the defer's message, redacted, is the operator's at warn level
    expect(aboveDebug).toContain(
      'warn: Deferred node-9.example.net on request of the helper: waiting for the CA; token=[redacted] [redacted]',
    );
    const debug = at(['debug']);
    expect(debug).toMatch(
      /How the attempt on node-1\.example\.net ended, in full: .*stdout: .*client_password\\":\\"\[redacted\]\\".*marker-out-6f2c.*BROKEN/,
    );
  });
});
