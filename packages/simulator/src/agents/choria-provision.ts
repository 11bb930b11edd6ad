// The choria_provision agent of a provisioning-mode go-choria server:
// token check, provisioning lock, agent mutex, Go-style input decoding and the exact status texts.
import { X509Certificate, createPublicKey, sign } from 'node:crypto';
import { generateCsr } from '../crypto/csr.js';
import { generateX25519, x25519SharedSecret } from '../crypto/ecdh.js';
import { generateOkpPair } from '../crypto/keys.js';
import { decryptLegacyPemKey } from '../crypto/pem.js';
import { checkServerJwt, type ServerJwtKeys } from '../crypto/server-jwt.js';
import type { LifecycleEventType } from '../events.js';
import type { Rng } from '../random.js';
import type { ViolationKind } from '../violations.js';
import { decodeGoStringMap, decodeGoStruct, type GoStructSpec, type JValue } from '../wire/gojson.js';
import type { DecodedRequest } from '../wire/types.js';
import { errorReply, okReply, StatusCode, type RpcReply } from './mcorpc.js';
import { versionHas } from './releases.js';
import {
  CONFIG_DIR,
  CONFIG_FILE,
  INITIAL_CONFIGURATION,
  SSL_DIR,
  type ExitKind,
  type ProvisionState,
} from './provision-state.js';

export const PROVISION_AGENT = 'choria_provision';
export const PROVISION_ACTIONS = [
  'configure',
  'gen25519',
  'gencsr',
  'jwt',
  'release_update',
  'reprovision',
  'restart',
  'shutdown',
] as const;
export const LOCKED_ACTIONS: ReadonlySet<string> = new Set([
  'configure',
  'gen25519',
  'gencsr',
  'jwt',
  'release_update',
]);

/** Services a node offers its provisioning agent. */
export interface ProvisionHost {
  readonly identity: string;
  readonly state: ProvisionState;
  readonly rng: Rng;
  readonly rsaBits: number;
  readonly lockMs: number;
  /** release_update's download and unpacking time (unscaled) */
  readonly updateMs: number;
  readonly serverJwtKeys: ServerJwtKeys | undefined;
  nowMs(): number;
  violation(kind: ViolationKind, detail: string): void;
  publishEvent(type: LifecycleEventType, extra?: { newVersion?: string }): void;
  /** leave the current process life after `delayMs` (unscaled; the host applies timeScale) */
  scheduleExit(kind: ExitKind, delayMs: number): void;
  /** resolves after `ms` (never, if the node is stopped first) */
  wait(ms: number): Promise<void>;
}

const S = (typeName: string, fields: GoStructSpec['fields']): GoStructSpec => ({ typeName, fields });
const SPECS: Readonly<Record<string, GoStructSpec>> = {
  jwt: S('provision.JWTRequest', { token: 'string' }),
  gen25519: S('provision.ED25519Request', { token: 'string', nonce: 'string' }),
  gencsr: S('provision.CSRRequest', {
    token: 'string',
    cn: 'string',
    C: 'string',
    L: 'string',
    O: 'string',
    OU: 'string',
    ST: 'string',
  }),
  configure: S('provision.ConfigureRequest', {
    token: 'string',
    config: 'string',
    certificate: 'string',
    ca: 'string',
    ssldir: 'string',
    key: 'string',
    ecdh_public: 'string',
    action_policies: 'map[string]string',
    opa_policies: 'map[string]string',
    server_jwt: 'string',
  }),
  restart: S('provision.RestartRequest', { token: 'string', splay: 'int' }),
  shutdown: S('provision.ShutdownRequest', { token: 'string' }),
  release_update: S('provision.ReleaseUpdateRequest', { token: 'string', repository: 'string', version: 'string' }),
  reprovision: S('provision.ReprovisionRequest', { token: 'string' }),
};

type Inputs = Record<string, string | number | Record<string, string> | undefined>;

const str = (v: Inputs[string]): string => (typeof v === 'string' ? v : '');
const strMap = (v: Inputs[string]): Record<string, string> => (typeof v === 'object' ? v : {});

/** Go's time.Duration String() for whole seconds: 2s, 1m5s, 1h0m0s. */
export function goSeconds(total: number): string {
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  if (h > 0) return `${h}h${m}m${sec}s`;
  if (m > 0) return `${m}m${sec}s`;
  return `${sec}s`;
}

/** Go config booleans: the values go-choria's configuration parser reads as true. */
/**
 * Why `certificatePem` cannot be used with the private key whose public half is `publicKeyPem`
 * (undefined when it can). A certificate that does not parse is left to the TLS setup.
 */
function certificateKeyMismatch(certificatePem: string, publicKeyPem: string): string | undefined {
  let certKey: string;
  try {
    certKey = new X509Certificate(certificatePem).publicKey.export({ type: 'spki', format: 'pem' }).toString();
  } catch {
    return undefined;
  }
  // go-choria's quirk, kept by gencsr: PKCS#1 RSAPublicKey DER under a `PUBLIC KEY` label
  const der = Buffer.from(publicKeyPem.replace(/-----(BEGIN|END)[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const nodeKey = createPublicKey({ key: der, format: 'der', type: 'pkcs1' })
    .export({ type: 'spki', format: 'pem' })
    .toString();
  return certKey === nodeKey
    ? undefined
    : 'configure sent a certificate for a private key the node no longer has (a later gencsr replaced it): ' +
        'the server cannot load its TLS pair and will not start';
}

function configTrue(v: string | undefined): boolean {
  return v !== undefined && ['1', 'true', 'yes', 'y', 't', 'on'].includes(v.trim().toLowerCase());
}

export class ChoriaProvisionAgent {
  /** one mutex per server process: actions run strictly one after another */
  private queue: Promise<unknown> = Promise.resolve();
  /** a release_update is downloading and unpacking its release */
  private updating = false;

  constructor(private readonly host: ProvisionHost) {}

  /** Returns the reply to send, or undefined when a real server would send none. */
  handle(req: DecodedRequest, action: string, data: JValue | undefined): Promise<RpcReply | undefined> {
    if (!(PROVISION_ACTIONS as readonly string[]).includes(action)) {
      this.host.violation('unknown-action', `${PROVISION_AGENT}#${action} does not exist`);
      return Promise.resolve(
        errorReply(action, StatusCode.UnknownAction, `Unknown action ${action} for agent ${PROVISION_AGENT}`),
      );
    }
    // an older release simply lacks the action; asking is no mistake, a provisioner cannot know before
    if (action === 'gen25519' && !versionHas(this.host.state.version, 'gen25519')) {
      return Promise.resolve(
        errorReply(action, StatusCode.UnknownAction, `Unknown action ${action} for agent ${PROVISION_AGENT}`),
      );
    }
    if (action === 'release_update' && this.updating) {
      // a real server queues it behind the running one and then installs the release once more
      this.host.violation(
        'update-while-updating',
        `release_update request ${req.requestId} sent while an earlier one is still downloading its release`,
      );
    }
    const run = this.queue.then(() => this.locked(req, action, data));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async locked(req: DecodedRequest, action: string, data: JValue | undefined): Promise<RpcReply | undefined> {
    const { state } = this.host;
    if (state.pendingExit !== undefined) {
      // The restart/shutdown goroutine holds the agent mutex until the process is gone.
      if (state.pendingExit === 'shutdown')
        this.host.violation('after-shutdown', `${action} sent after shutdown was accepted`);
      else if (action === 'configure')
        this.host.violation('configure-after-restart', `configure sent after ${state.pendingExit} was accepted`);
      return undefined;
    }
    if (LOCKED_ACTIONS.has(action) && versionHas(state.version, 'provisioningLock')) {
      const owner = `${req.senderId}.${req.callerId}`;
      const now = this.host.nowMs();
      if (state.lock !== undefined && state.lock.owner !== owner && state.lock.expiresAtMs > now) {
        this.host.violation(
          'lock-held',
          `${action} from ${owner} while ${state.lock.owner} holds the provisioning lock`,
        );
        return errorReply(action, StatusCode.Aborted, 'Could not obtain provisioning lock');
      }
      state.lock = { owner, expiresAtMs: now + this.host.lockMs };
    }
    switch (action) {
      case 'jwt':
        return this.jwt(action, data);
      case 'gen25519':
        return this.gen25519(action, data);
      case 'gencsr':
        return this.gencsr(action, data);
      case 'configure':
        return this.configure(action, data);
      case 'restart':
        return this.restart(action, data);
      case 'shutdown':
        return this.shutdown(action, data);
      case 'release_update':
        return this.releaseUpdate(action, data);
      default:
        return this.refuse(action, 'Server is already in provisioning mode, cannot enable provisioning mode again');
    }
  }

  private refuse(action: string, message: string, kind: ViolationKind = 'refused'): RpcReply {
    this.host.violation(kind, message);
    return errorReply(action, StatusCode.Aborted, message);
  }

  /** Go's ParseRequestData followed by the token check. */
  private inputs(
    action: string,
    data: JValue | undefined,
  ): { ok: true; args: Inputs } | { ok: false; reply: RpcReply } {
    const spec = SPECS[action];
    if (spec === undefined) throw new Error(`no input structure for ${action}`);
    const decoded = decodeGoStruct(spec, data ?? { t: 'obj', v: [] });
    if (!decoded.ok) {
      const msg = `Could not parse request data for ${PROVISION_AGENT}#${action}: ${decoded.error}`;
      this.host.violation('bad-input', msg);
      return { ok: false, reply: errorReply(action, StatusCode.InvalidData, msg) };
    }
    const token = str(decoded.value['token']);
    if (this.host.state.token !== '' && token !== this.host.state.token) {
      return { ok: false, reply: this.refuse(action, 'Incorrect provision token supplied', 'bad-token') };
    }
    return { ok: true, args: decoded.value };
  }

  private jwt(action: string, data: JValue | undefined): RpcReply {
    const input = this.inputs(action, data);
    if (!input.ok) return input.reply;
    const { state } = this.host;
    if (state.provisioningJwt === undefined) return this.refuse(action, 'No Provisioning JWT file has been configured');
    state.ecdh = generateX25519();
    return okReply(action, { jwt: state.provisioningJwt, ecdh_public: state.ecdh.publicHex });
  }

  private gen25519(action: string, data: JValue | undefined): RpcReply {
    const input = this.inputs(action, data);
    if (!input.ok) return input.reply;
    const args = input.args;
    const { state } = this.host;
    const { privateKey, publicHex } = generateOkpPair('ed25519');
    state.hasServerJwt = false; // server.jwt is deleted with every new key
    state.ed25519PublicHex = publicHex;
    const signature = sign(null, Buffer.from(str(args['nonce']), 'utf8'), privateKey).toString('hex');
    return okReply(action, { public_key: state.ed25519PublicHex, directory: CONFIG_DIR, signature });
  }

  private async gencsr(action: string, data: JValue | undefined): Promise<RpcReply> {
    const input = this.inputs(action, data);
    if (!input.ok) return input.reply;
    const args = input.args;
    const cn = str(args['cn']) === '' ? this.host.identity : str(args['cn']);
    let csr;
    try {
      csr = await generateCsr(
        { cn, C: str(args['C']), L: str(args['L']), O: str(args['O']), OU: str(args['OU']), ST: str(args['ST']) },
        this.host.rsaBits,
      );
    } catch (e) {
      return this.refuse(action, `Could not create CSR: ${e instanceof Error ? e.message : String(e)}`);
    }
    // a new private key replaces the one before, whatever certificate was issued for that
    this.host.state.hasPrivateKey = true;
    this.host.state.csrPublicKeyPem = csr.publicKeyPem;
    return okReply(action, { csr: csr.csrPem, public_key: csr.publicKeyPem, ssldir: SSL_DIR });
  }

  private async configure(action: string, data: JValue | undefined): Promise<RpcReply> {
    const { state } = this.host;
    const input = this.inputs(action, data);
    if (!input.ok) return input.reply;
    const args = input.args;
    const config = str(args['config']);
    if (config === '') {
      return this.refuse(
        action,
        'Did not receive any configuration to write, cannot write a empty configuration file',
        'empty-config',
      );
    }
    const key = str(args['key']);
    const ecdhPublic = str(args['ecdh_public']);
    if (key !== '' && ecdhPublic === '') {
      return this.refuse(action, 'EDCH Public Key not supplied while providing a private key', 'key-decrypt-failed');
    }
    const settings = decodeGoStringMap(config);
    if (!settings.ok)
      return this.refuse(action, `Could not decode configuration data: ${settings.error}`, 'config-not-strings');

    const certificate = str(args['certificate']);
    const ssldir = str(args['ssldir']);
    const ca = str(args['ca']);
    if (certificate !== '' && ssldir !== '' && ca !== '') {
      state.hasCertificate = true; // certificate.pem and ca.pem are written before the key is decrypted
      // Without a key of its own in the request, the node keeps the private key its last gencsr
      // made: a certificate for another key (an earlier gencsr's) leaves a server that cannot load
      // its TLS pair and never starts again.
      if (key === '' && state.csrPublicKeyPem !== undefined) {
        const mismatch = certificateKeyMismatch(certificate, state.csrPublicKeyPem);
        if (mismatch !== undefined) this.host.violation('key-mismatch', mismatch);
      }
      if (key !== '') {
        let secret: Buffer;
        try {
          secret = x25519SharedSecret(state.ecdh?.privateKey, ecdhPublic);
        } catch (e) {
          const msg = `TLS Setup Failed: could not decrypt private key: ${e instanceof Error ? e.message : String(e)}`;
          return this.refuse(action, msg, 'key-decrypt-failed');
        }
        const decrypted = decryptLegacyPemKey(key, secret);
        if (!decrypted.ok) {
          const msg = `TLS Setup Failed: could not decrypt private key: ${decrypted.error}`;
          return this.refuse(
            action,
            msg,
            decrypted.reason === 'not-encrypted' ? 'key-not-encrypted' : 'key-decrypt-failed',
          );
        }
        state.hasPrivateKey = true;
      }
    }

    const serverJwt = str(args['server_jwt']);
    if (serverJwt !== '') {
      const check = await checkServerJwt({
        token: serverJwt,
        identity: this.host.identity,
        nodePublicKeyHex: state.ed25519PublicHex,
        keys: this.host.serverJwtKeys,
        nowMs: this.host.nowMs(),
      });
      state.hasServerJwt = true;
      state.serverJwtClaims = check.claims;
      for (const problem of check.problems) this.host.violation('server-jwt-invalid', problem);
    }
    state.configuration = settings.value;

    // Policies are written after the configuration file, so a bad policy name aborts the action
    // but leaves the new configuration in place, as upstream does.
    const actionPolicies = strMap(args['action_policies']);
    const opaPolicies = strMap(args['opa_policies']);
    const badAction = Object.keys(actionPolicies).find((name) => !name.endsWith('.policy'));
    if (badAction !== undefined)
      return this.refuse(action, `Could not save Action Policies: expected "${badAction}" to have .policy extension`);
    const badOpa = Object.keys(opaPolicies).find((name) => !name.endsWith('.rego'));
    if (badOpa !== undefined) {
      return this.refuse(
        action,
        `Could not save Open Policy Agent Policies: expected "${badOpa}" to have .rego extension`,
      );
    }
    const actionNames = Object.keys(actionPolicies).filter((n) => actionPolicies[n] !== '');
    const opaNames = Object.keys(opaPolicies).filter((n) => opaPolicies[n] !== '');
    if (Object.keys(actionPolicies).length > 0 || Object.keys(opaPolicies).length > 0) {
      state.policies = {
        action: Object.keys(actionPolicies).length > 0 ? actionNames.sort() : (state.policies?.action ?? []),
        opa: Object.keys(opaPolicies).length > 0 ? opaNames.sort() : (state.policies?.opa ?? []),
      };
    }
    state.configuredCount++;
    state.configuredThisCycle++;
    state.maxConfiguredPerCycle = Math.max(state.maxConfiguredPerCycle, state.configuredThisCycle);
    this.host.publishEvent('provisioned');
    return okReply(action, { message: `Wrote ${Object.keys(settings.value).length + 1} lines to ${CONFIG_FILE}` });
  }

  private restart(action: string, data: JValue | undefined): RpcReply | undefined {
    const input = this.inputs(action, data);
    if (!input.ok) return input.reply;
    const args = input.args;
    // go-choria reads the configuration file again and refuses unless it exists, parses and no
    // longer enables provisioning: a node that was never configured refuses either way.
    if (this.host.state.configuration === undefined && this.host.state.bootConfigFile === 'missing') {
      return this.refuse(
        action,
        `Configuration ${CONFIG_FILE} could not be parsed, restart cannot continue: open ${CONFIG_FILE}: ` +
          `no such file or directory`,
        'restart-refused',
      );
    }
    const configuration = this.host.state.configuration ?? INITIAL_CONFIGURATION;
    if (configTrue(configuration['plugin.choria.server.provision'])) {
      return this.refuse(
        action,
        `Configuration ${CONFIG_FILE} enables provisioning, restart cannot continue`,
        'restart-refused',
      );
    }
    let splay = typeof args['splay'] === 'number' ? args['splay'] : 0;
    if (splay < 0) {
      // rand.Intn panics on a negative bound: the server process dies without replying.
      this.host.violation(
        'bad-input',
        `restart with splay ${splay} crashes go-choria (rand.Intn panics on a negative bound)`,
      );
      this.host.state.pendingExit = 'crash';
      this.host.scheduleExit('crash', 2000);
      return undefined;
    }
    if (splay === 0) splay = 10;
    const delaySeconds = this.host.rng.int(Math.min(splay, 2 ** 31)) + 2;
    this.host.state.pendingExit = 'restart';
    this.host.scheduleExit('restart', delaySeconds * 1000);
    return okReply(action, { message: `Restarting Choria Server after ${goSeconds(delaySeconds)}` });
  }

  private shutdown(action: string, data: JValue | undefined): RpcReply {
    const input = this.inputs(action, data);
    if (!input.ok) return input.reply;
    const delaySeconds = this.host.rng.int(10);
    this.host.state.pendingExit = 'shutdown';
    this.host.scheduleExit('shutdown', delaySeconds * 1000);
    return okReply(action, { message: `Shutting Choria Server down after ${goSeconds(delaySeconds)}` });
  }

  private async releaseUpdate(action: string, data: JValue | undefined): Promise<RpcReply> {
    const { state } = this.host;
    if (!state.allowUpdate) return this.refuse(action, 'Version updates is not enabled in the configuration');
    const input = this.inputs(action, data);
    if (!input.ok) return input.reply;
    const args = input.args;
    const version = str(args['version']);
    const repository = str(args['repository']);
    if (version === '' || !/^https?:\/\/\S+/.test(repository)) {
      const why = version === '' ? 'no version given' : `invalid repository ${JSON.stringify(repository)}`;
      return this.refuse(action, `Update to version ${version} failed, release rolled back: ${why}`, 'bad-input');
    }
    if (this.host.updateMs > 0) {
      // the download and unpacking: every other action of the agent waits for the mutex meanwhile
      this.updating = true;
      try {
        await this.host.wait(this.host.updateMs);
      } finally {
        this.updating = false;
      }
    }
    this.host.publishEvent('upgraded', { newVersion: version });
    state.version = version;
    state.pendingExit = 'update';
    this.host.scheduleExit('update', 2000);
    return okReply(action, { message: 'Restarting Choria Server after 2s' });
  }
}
