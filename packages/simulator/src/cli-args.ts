// Command line parsing for the choria-simulator bin (plain process.argv parsing: the flag set is
// small and flat).
import type { EventFormat } from './events.js';
import type { FleetProtocol } from './options.js';
import { DEFAULT_WATCHDOG_S } from './watchdog.js';

export interface SimulatorArgs {
  servers: string[];
  user?: string;
  password?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  name: string;
  count: number;
  identityPattern?: string;
  nodesPerConnection?: number;
  protocol: FleetProtocol;
  token?: string;
  jwtSigner?: 'rsa' | 'ed25519' | 'none';
  jwtKeyFile?: string;
  keysDir?: string;
  jwtOu?: string;
  jwtUpdate: boolean;
  jwtChs: boolean;
  jwtExtensions?: Record<string, unknown>;
  issuerPublic?: string;
  serverJwtSignerPublic?: string;
  version?: string;
  upgradable: boolean;
  facts?: string;
  eventFormat?: EventFormat;
  bootSpreadMs?: number;
  dropRate?: number;
  latencyMs?: number;
  latencyJitterMs?: number;
  silentNodes?: number;
  vanishRate?: number;
  reenterAfterMs?: number;
  lockMs?: number;
  timeScale?: number;
  updateMs?: number;
  rsaBits?: number;
  seed?: number;
  /** seconds the event loop may stand still before the watchdog ends the process; 0: off */
  watchdogS: number;
  verbose: boolean;
  help: boolean;
}

export const USAGE = `usage: choria-simulator --server nats://host:4222 [options]

  --server URL              NATS URL (repeat or comma-separate for several)   (required)
  --user U --password P     NATS credentials
  --tls-ca F --tls-cert F --tls-key F
  --name NAME               fleet name for choria.simulator.<name>.{report,stop} (default sim)
  --count N                 number of simulated servers (default 10)
  --identity-pattern P      default node-{i}.example.net ({i} one-based, {i:4} zero-padded, {i0} zero-based)
  --nodes-per-connection N  default 1000
  --protocol v1|v2|mixed    default v1
  --token T                 provisioning token (cht)
  --jwt-signer rsa|ed25519|none   provisioning JWT signer (default rsa for v1/mixed, ed25519 for v2)
  --jwt-key FILE            RSA private key PEM or 64-hex ed25519 seed file
  --keys-dir DIR            read the signer key from DIR or write fresh ones there (default: a temp dir)
  --jwt-ou OU --jwt-update --jwt-chs --jwt-extensions JSON
  --issuer-public HEX|FILE  org issuer public key to verify server JWTs (chains)
  --server-jwt-signer-public FILE|HEX   provisioner jwt_signing_key public half (RSA PEM or ed25519 hex)
  --version V --upgradable --facts JSON|@FILE
  --event-format cloudevents|choria|none
  --boot-spread DUR --drop-rate R --latency DUR --latency-jitter DUR
  --silent-nodes N|FRACTION --vanish-rate R --lock DUR --time-scale X --update-time DUR --rsa-bits N --seed N
  --reenter-after DUR       a restarted node comes back into provisioning mode after DUR (+-50 %)
  --watchdog SECONDS        end the process with a message when its event loop stands still this long
                            (default 30; 0: off)
  --verbose                 log to stderr
Durations: 250ms, 3s, 2m, 1h or plain milliseconds.`;

/** Parses `250ms`, `3s`, `1.5m`, `1h` or a plain number of milliseconds. */
export function parseDurationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) throw new Error(`invalid duration ${JSON.stringify(text)}: use e.g. 250ms, 3s, 2m or 1h`);
  const n = Number(m[1]);
  const unit = m[2] ?? 'ms';
  const factor = unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000;
  return Math.round(n * factor);
}

function num(flag: string, text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n))
    throw new Error(`${flag} expects a number, got ${JSON.stringify(text)}`);
  return n;
}

function int(flag: string, text: string): number {
  const n = num(flag, text);
  if (!Number.isInteger(n)) throw new Error(`${flag} expects an integer, got ${JSON.stringify(text)}`);
  return n;
}

function oneOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text))
    throw new Error(`${flag} must be one of ${allowed.join(', ')}, got ${JSON.stringify(text)}`);
  return text as T;
}

const BOOLEAN_FLAGS = new Set(['--jwt-update', '--jwt-chs', '--upgradable', '--verbose', '--help', '-h']);

export function parseSimulatorArgs(argv: readonly string[]): SimulatorArgs {
  const a: SimulatorArgs = {
    servers: [],
    name: 'sim',
    count: 10,
    protocol: 'v1',
    jwtUpdate: false,
    jwtChs: false,
    upgradable: false,
    watchdogS: DEFAULT_WATCHDOG_S,
    verbose: false,
    help: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i] ?? '';
    const eq = raw.indexOf('=');
    const flag = raw.startsWith('--') && eq > 0 ? raw.slice(0, eq) : raw;
    let inline = raw.startsWith('--') && eq > 0 ? raw.slice(eq + 1) : undefined;
    if (BOOLEAN_FLAGS.has(flag)) {
      const on = inline === undefined || inline === 'true';
      switch (flag) {
        case '--jwt-update':
          a.jwtUpdate = on;
          break;
        case '--jwt-chs':
          a.jwtChs = on;
          break;
        case '--upgradable':
          a.upgradable = on;
          break;
        case '--verbose':
          a.verbose = on;
          break;
        default:
          a.help = true;
      }
      continue;
    }
    const value = (): string => {
      if (inline !== undefined) {
        const v = inline;
        inline = undefined;
        return v;
      }
      const v = argv[i + 1];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      i++;
      return v;
    };
    switch (flag) {
      case '--server':
        a.servers.push(
          ...value()
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== ''),
        );
        break;
      case '--user':
        a.user = value();
        break;
      case '--password':
        a.password = value();
        break;
      case '--tls-ca':
        a.tls = { ...a.tls, caFile: value() };
        break;
      case '--tls-cert':
        a.tls = { ...a.tls, certFile: value() };
        break;
      case '--tls-key':
        a.tls = { ...a.tls, keyFile: value() };
        break;
      case '--name':
        a.name = value();
        break;
      case '--count':
        a.count = int(flag, value());
        break;
      case '--identity-pattern':
        a.identityPattern = value();
        break;
      case '--nodes-per-connection':
        a.nodesPerConnection = int(flag, value());
        break;
      case '--protocol':
        a.protocol = oneOf(flag, value(), ['v1', 'v2', 'mixed'] as const);
        break;
      case '--token':
        a.token = value();
        break;
      case '--jwt-signer':
        a.jwtSigner = oneOf(flag, value(), ['rsa', 'ed25519', 'none'] as const);
        break;
      case '--jwt-key':
        a.jwtKeyFile = value();
        break;
      case '--keys-dir':
        a.keysDir = value();
        break;
      case '--jwt-ou':
        a.jwtOu = value();
        break;
      case '--jwt-extensions': {
        const v: unknown = JSON.parse(value());
        if (typeof v !== 'object' || v === null || Array.isArray(v))
          throw new Error('--jwt-extensions expects a JSON object');
        a.jwtExtensions = v as Record<string, unknown>;
        break;
      }
      case '--issuer-public':
        a.issuerPublic = value();
        break;
      case '--server-jwt-signer-public':
        a.serverJwtSignerPublic = value();
        break;
      case '--version':
        a.version = value();
        break;
      case '--facts':
        a.facts = value();
        break;
      case '--event-format':
        a.eventFormat = oneOf(flag, value(), ['cloudevents', 'choria', 'none'] as const);
        break;
      case '--boot-spread':
        a.bootSpreadMs = parseDurationMs(value());
        break;
      case '--drop-rate':
        a.dropRate = num(flag, value());
        break;
      case '--latency':
        a.latencyMs = parseDurationMs(value());
        break;
      case '--latency-jitter':
        a.latencyJitterMs = parseDurationMs(value());
        break;
      case '--silent-nodes':
        a.silentNodes = num(flag, value());
        break;
      case '--vanish-rate':
        a.vanishRate = num(flag, value());
        break;
      case '--reenter-after':
        a.reenterAfterMs = parseDurationMs(value());
        break;
      case '--lock':
        a.lockMs = parseDurationMs(value());
        break;
      case '--time-scale':
        a.timeScale = num(flag, value());
        break;
      case '--update-time':
        a.updateMs = parseDurationMs(value());
        break;
      case '--rsa-bits':
        a.rsaBits = int(flag, value());
        break;
      case '--seed':
        a.seed = int(flag, value());
        break;
      case '--watchdog':
        a.watchdogS = num(flag, value());
        if (a.watchdogS < 0) throw new Error('--watchdog must be 0 (off) or a number of seconds');
        break;
      default:
        throw new Error(`unknown option ${JSON.stringify(raw)}`);
    }
  }
  return a;
}
