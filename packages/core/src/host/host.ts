// One server's provisioning. A Host is built from a config, a
// Choria client, a helper and metrics; it knows nothing of the scheduler, so it can be run and
// tested alone. Nothing is kept across attempts: every attempt starts from scratch, like upstream.
import { issuedCredentials } from './credentials.js';
import { readFileSync } from 'node:fs';
import type { Logger } from 'winston';
import type { ChoriaClient } from '../choria/client.js';
import type { ProvisionerConfig } from '../config/types.js';
import { HELPER_ASKED, type HostJob, type HostMetrics, type HostResult, type HostRunner } from './types.js';
import { formatDuration } from '../util/duration.js';
import { newRequestId } from '../util/ids.js';
import { PauseFlag } from '../util/pause.js';
import { abortError, isCancelled, pausedError } from '../util/cancelled.js';
import { rpmVersionCompare } from '../util/rpmvercmp.js';
import { assertAcceptedByNode, replyWarnings } from './helper/reply-checks.js';
import type {
  HelperCsr,
  HelperEd25519PubKey,
  HelperJwtClaims,
  HelperReply,
  HelperRequest,
  HelperRunner,
} from './helper/types.js';
import {
  parseCsrReply,
  parseEd25519Reply,
  parseInventoryReply,
  parseJwtReply,
  type Ed25519Reply,
  type Inventory,
} from './node-replies.js';
import { NodeReleaseError, nodeHasFeature } from './node-release.js';
import { LifecycleWitness } from './lifecycle-witness.js';
import type { LostReplyTimings } from './lost-reply.js';
import { RpcAbortedError, RpcStatusError, RpcUnknownActionError } from '../choria/errors.js';
import { LockedElsewhereError, NodeGoneError, StepFailedError, type StepContext, type StepResult } from './step.js';
import { readStep } from './read-step.js';
import { changeStep } from './change-step.js';
import {
  claimsForHelper,
  encryptKeyForNode,
  loadVerificationKey,
  mintServerToken,
  SigningKeyCache,
  parseServerClaims,
  parseVerificationKeyFile,
  validateCsr,
  verifyNonceSignature,
  verifyProvisioningToken,
  verifyProvisioningTokenWithKey,
  VerifiedTokens,
  type ProvisioningClaims,
  type VerificationKey,
} from './security/index.js';
import { errorText } from '../util/values.js';
import { ProvisionerError, failureTexts } from '../util/errors.js';
import { SecretSet, maskKnownSecrets, redactSecrets, secretValuesOf } from '../util/redact.js';
import { configSecrets } from '../config/provisioner-config.js';
import { publicStatusMessage } from '../choria/errors.js';
import { Claim } from './claim.js';
import { NodeProbe } from './node-probe.js';

/** What a host runner is built from: the public settings (docs/embedding.md). */
export interface HostRunnerSettings {
  readonly config: ProvisionerConfig;
  readonly client: ChoriaClient;
  readonly helper: HelperRunner;
  readonly metrics: HostMetrics;
  readonly pause: PauseFlag;
  /** per-try RPC timeout; default: the client's (discovery timeout + the agent's DDL timeout) */
  readonly rpcTimeoutMs?: number;
  /** `run --dry-run`: every fetch, check and the helper, but nothing that changes the node */
  readonly dryRun?: boolean;
  /**
   * how long configure and restart may go on after the attempt was cancelled (stop, lost
   * leadership), so a node is not left configured but not restarted; default 8 s, inside the
   * provisioner's 10 s stop wait
   */
  readonly commitGraceMs?: number;
}

/** The settings plus what the library's own parts and tests hand in (internal). */
export interface HostDeps extends HostRunnerSettings {
  /** test hook: back-off between RPC tries */
  readonly backoff?: (failedTry: number) => number;
  /**
   * lifecycle events of the fleet, evidence after a lost reply; createHostRunner makes one on the
   * client. Without it a lost reply is investigated by discovery alone.
   */
  readonly witness?: LifecycleWitness;
  /** how lost replies are investigated (tests against a sped-up fleet shorten them) */
  readonly lostReply?: LostReplyTimings;
}

const DEFAULT_COMMIT_GRACE_MS = 8_000;

const ignoreReply = (): undefined => undefined;

/**
 * The helper asked to stop here: nothing changes on the node. Its `msg` is the helper's own text,
 * so it goes to the log (redacted) and never to the monitor port, which says only that it deferred.
 */
class DeferredError extends ProvisionerError {
  /** the helper's message, redacted */
  readonly helperMessage: string;

  constructor(msg: string) {
    const said = redactSecrets(msg.trim());
    super(`configuration defered: ${said}`, { publicMessage: helperAskedText(HELPER_ASKED.deferred, said) });
    this.helperMessage = said;
  }
}

/** What the monitor port says of a defer or shutdown the helper asked for: that it did, and where its message is. */
function helperAskedText(what: string, said: string): string {
  return said === '' ? `${what}, without a message` : `${what}; its message is in the provisioner's log`;
}

/** The HostResult field that carries the helper's own message to the log, when it said one. */
function helperSaid(said: string): { helperMessage?: string } {
  return said === '' ? {} : { helperMessage: said };
}

/** What configure sends: the helper's reply, its checked configuration, the minted token and the encrypted key. */
interface ConfigureInput {
  readonly reply: HelperReply;
  readonly configuration: Readonly<Record<string, string>>;
  readonly serverJwt: string;
  readonly key: { key: string; ecdhPublic: string };
}

/** Everything learned about the node during one attempt. */
interface Facts {
  jwtClaims: HelperJwtClaims | null;
  ecdhPublic: string;
  ed25519: HelperEd25519PubKey | null;
  inventory: Inventory | undefined;
  csr: HelperCsr | null;
}

/**
 * A HostRunner for these dependencies. Without a witness it opens one on the client; `close()`
 * unsubscribes it (a witness passed in belongs to the caller and is left alone).
 */
export function createHostRunner(deps: HostDeps): HostRunner {
  const keys = new VerificationKeyCache();
  const signing = new SigningKeyCache();
  const own =
    deps.witness === undefined
      ? LifecycleWitness.listen(deps.client, { provisioningComponent: deps.config.lifecycleComponent })
      : undefined;
  const withWitness: HostDeps = own === undefined ? deps : { ...deps, witness: own };
  const run: HostRunner = (job) => new Host(withWitness, job, keys, signing).provision();
  run.close = () => own?.close();
  return run;
}

/**
 * `jwt_verify_cert` is read again when a node needs it and the last read is more than a second
 * old (a replaced file takes effect within a second, without a file read per node), and the key
 * it holds is parsed only when the setting or the file content changed: an OpenSSL public-key
 * import is a noticeable share of a node's provisioning. Anything unusual (an
 * unreadable file) goes through `loadVerificationKey`, so errors read as before.
 */
export class VerificationKeyCache {
  #setting: string | undefined;
  /** the file content the key came from; undefined: the setting itself is the hex key */
  #content: Buffer | undefined;
  #key: VerificationKey | undefined;
  /** when the file was last read (performance.now()) */
  #readAt = -Infinity;
  readonly #rereadMs: number;
  /** tokens verified with #key; replaced with the key */
  #verified = new VerifiedTokens();

  /** `rereadMs`: how long one read of the file is trusted; default 1000 ms */
  constructor(rereadMs = 1_000) {
    this.#rereadMs = rereadMs;
  }

  get(setting: string): VerificationKey {
    const now = performance.now();
    if (this.#key !== undefined && this.#setting === setting && now - this.#readAt < this.#rereadMs) return this.#key;
    let content: Buffer | undefined;
    try {
      content = readFileSync(setting); // fails with ENOENT for a missing file, as a stat would
    } catch (err) {
      // Only a missing file makes the setting a hex key, exactly as loadVerificationKey decides.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return loadVerificationKey(setting);
    }
    const known =
      this.#key !== undefined &&
      this.#setting === setting &&
      (content === undefined
        ? this.#content === undefined
        : this.#content !== undefined && content.equals(this.#content));
    if (known && this.#key !== undefined) {
      this.#readAt = now;
      return this.#key;
    }
    const key = content === undefined ? loadVerificationKey(setting) : parseVerificationKeyFile(content);
    this.#setting = setting;
    this.#content = content;
    this.#key = key;
    this.#readAt = now;
    this.#verified = new VerifiedTokens();
    return key;
  }

  /** verifyProvisioningToken with the key from this cache. */
  verify(token: string, setting: string): ProvisioningClaims {
    // an empty token or setting: let the verifier word the error
    if (token.trim() === '' || setting === '') return verifyProvisioningToken(token, setting);
    const key = this.get(setting);
    return verifyProvisioningTokenWithKey(token, key, { verified: this.#verified });
  }
}

export class Host {
  readonly identity: string;
  readonly #deps: HostDeps;
  readonly #job: HostJob;
  readonly #log: Logger;
  readonly #ctx: StepContext;
  readonly #facts: Facts = { jwtClaims: null, ecdhPublic: '', ed25519: null, inventory: undefined, csr: null };
  readonly #keys: VerificationKeyCache;
  readonly #signing: SigningKeyCache;
  /** configure succeeded in this attempt (so a failed restart can be resumed by the next one) */
  #configured = false;
  /**
   * the secrets this attempt knows of: the configuration's, the request's claims, and the secret
   * values the helper returned; blanked wherever a node or the helper echoes them
   */
  readonly #secrets: SecretSet;
  readonly #mask = (text: string): string => maskKnownSecrets(text, this.#secrets);

  /** `keys` is shared by the hosts of one runner; a lone Host gets its own. */
  constructor(
    deps: HostDeps,
    job: HostJob,
    keys: VerificationKeyCache = new VerificationKeyCache(),
    signing: SigningKeyCache = new SigningKeyCache(),
  ) {
    this.#deps = deps;
    this.#keys = keys;
    this.#signing = signing;
    this.#job = job;
    this.identity = job.identity;
    this.#log = job.logger;
    this.#secrets = new SecretSet(configSecrets(deps.config));
    this.#ctx = {
      mask: this.#mask,
      identity: job.identity,
      client: deps.client,
      metrics: deps.metrics,
      pause: deps.pause,
      signal: job.signal,
      logger: job.logger,
      ...(deps.backoff !== undefined ? { backoff: deps.backoff } : {}),
      ...(deps.rpcTimeoutMs !== undefined ? { timeoutMs: deps.rpcTimeoutMs } : {}),
      ...(deps.witness !== undefined ? { witness: deps.witness } : {}),
      ...(deps.lostReply !== undefined ? { lostReply: deps.lostReply } : {}),
      ...(job.onWatching !== undefined ? { onWatching: () => job.onWatching?.() } : {}),
      claim: job.claim ?? new Claim(job.identity),
      ...(deps.config.livenessTimeoutMs > 0
        ? {
            liveness: {
              timeoutMs: deps.config.livenessTimeoutMs,
              used: false,
              check: () => this.#answersPing(deps.config.livenessTimeoutMs),
            },
          }
        : {}),
    };
  }

  /** Whether the node answers anything to rpcutil#ping within `timeoutMs` (the one probe's rule of silence). */
  async #answersPing(timeoutMs: number): Promise<boolean> {
    return (await new NodeProbe(this.#deps.client, this.identity, this.#job.signal).ping(timeoutMs)) === 'answered';
  }

  async provision(): Promise<HostResult> {
    const cfg = this.#deps.config;
    const waited = Date.now() - this.#job.discoveredAt;
    if (waited > 2 * cfg.intervalMs) {
      return { outcome: 'stale', message: `skipping node that's been waiting ${formatDuration(waited)}` };
    }
    this.#log.info(`Provisioning ${this.identity}`);
    try {
      if (this.#job.configuredAt !== undefined && this.#deps.dryRun !== true && (await this.#restartRemembered())) {
        return { outcome: 'provisioned', message: 'restarted with the configuration of an earlier attempt' };
      }
      if (cfg.coordination === 'active_active' && !cfg.features.jwt) await this.#takeNodeLock();
      if (cfg.features.jwt) await this.#fetchJwt();
      if (cfg.features.ed25519) await this.#fetchEd25519();
      await this.#fetchInventory();
      if (cfg.features.pki) await this.#fetchCsr();
      const reply = await this.#runHelper();
      // the helper may have taken long enough for this instance's right to act to lapse
      this.#ctx.claim.assertMayAct(`acting on the helper's reply for ${this.identity}`);
      if (reply.defer === true) throw new DeferredError(reply.msg ?? '');
      if (reply.shutdown !== true) assertAcceptedByNode(reply, this.identity);
      if (this.#deps.dryRun === true) return this.#wouldSend(reply);
      if (reply.shutdown === true) return await this.#shutdown(reply);
      // Upstream order: mint the server JWT, encrypt the key, upgrade, then configure.
      const serverJwt = cfg.features.ed25519 ? this.#mintServerJwt(reply) : '';
      const key = this.#encryptKey(reply);
      if (this.#wantsUpgrade(reply)) {
        const upgrade = await this.#upgrade(reply);
        if (upgrade === 'back')
          return { outcome: 'upgraded', message: `updated to version ${reply.upgrade ?? ''}`, waitingAgain: true };
        if (upgrade === 'updating')
          return { outcome: 'upgraded', message: `updating to version ${reply.upgrade ?? ''}` };
      }
      const input: ConfigureInput = { reply, configuration: this.#configurationOf(reply), serverJwt, key };
      const credentials = issuedCredentials({
        certificate: reply.certificate,
        serverJwt,
        claims: this.#facts.jwtClaims ?? undefined,
      });
      this.#ctx.claim.configuresWith(credentials);
      const result = await this.#committed((ctx) => this.#configureAndRestart(ctx, input));
      return credentials === undefined ? result : { ...result, credentials };
    } catch (err) {
      return this.#failure(err);
    }
  }

  /**
   * configure, then restart. The two belong together: a node configured but not restarted stays
   * in provisioning mode with its new configuration until something restarts it.
   */
  async #configureAndRestart(ctx: StepContext, input: ConfigureInput): Promise<HostResult> {
    const configured = await this.#configure(ctx, input);
    this.#configured = true;
    if (configured === 'unsure') {
      if (await this.#restartConfigured(ctx))
        return {
          outcome: 'provisioned',
          message: 'the configure reply was lost, but the restart showed it was applied',
        };
      await this.#configure(ctx, input);
      this.#configured = true;
    }
    const replied = await this.#restart(ctx);
    return replied
      ? { outcome: 'provisioned' }
      : { outcome: 'provisioned', message: 'the restart reply was lost, but the node left provisioning mode' };
  }

  /**
   * Runs `work` as one unit that a pause does not interrupt and a stop interrupts only
   * `commitGraceMs` after it came: once configure may have been applied, leaving before the
   * restart would leave the node configured in provisioning mode. The grace is for a stop only:
   * the right to act must still hold for every request in it (the claim is asked before each),
   * and an attempt whose right to act was lost (leadership lost, lease lapsed) ends at once, since
   * another instance may be working on the node already. Checked before it starts: an attempt
   * cancelled or paused by then sends nothing more.
   */
  async #committed<T>(work: (ctx: StepContext) => Promise<T>): Promise<T> {
    const job = this.#job.signal;
    if (job.aborted) throw abortError(job, 'choria_provision#configure');
    if (this.#deps.pause.paused) throw pausedError('choria_provision#configure');
    const graceMs = this.#deps.commitGraceMs ?? DEFAULT_COMMIT_GRACE_MS;
    const unit = this.#ctx.claim.commit(job, graceMs, (text) => this.#log.info(text));
    try {
      return await work({ ...this.#ctx, signal: unit.signal, pause: new PauseFlag(false) });
    } finally {
      unit.release();
    }
  }

  /**
   * The earlier attempt configured the node but did not see it restart: restart it first. The
   * memory is trusted for this one restart only: refused, the node is not configured (whatever
   * go-choria said); failed any other way, the next attempt starts from scratch.
   */
  async #restartRemembered(): Promise<boolean> {
    this.#log.info(`${this.identity} was configured by an earlier attempt that could not restart it: restarting it`);
    this.#configured = true;
    try {
      return await this.#restartConfigured(this.#ctx);
    } catch (err) {
      if (!this.#cancelled(err)) this.#configured = false;
      throw err;
    }
  }

  #cancelled(err: unknown): boolean {
    return isCancelled(err) || this.#job.signal.aborted;
  }

  /**
   * How the attempt ended after `err`. The result's message is the error's public message (what
   * the monitor port and the history show); its detail, when there is more to say, is the full
   * message for the log at debug level. Both have the attempt's known secrets blanked.
   */
  #failure(err: unknown): HostResult {
    const { message, detail } = failureTexts(err, this.#mask);
    const texts = { message, ...(detail !== undefined ? { detail } : {}) };
    // the helper's message is all a defer's full text adds, and it has a field of its own
    if (err instanceof DeferredError)
      return { outcome: 'deferred', message, ...helperSaid(this.#mask(err.helperMessage)) };
    if (err instanceof LockedElsewhereError) return { outcome: 'skipped_locked', ...texts, error: err };
    if (err instanceof NodeGoneError) return { outcome: 'gone', ...texts, error: err };
    const error = err instanceof Error ? err : new Error(String(err));
    const configured = this.#configured ? { configured: true } : {};
    if (this.#cancelled(err)) return { outcome: 'cancelled', ...texts, error, ...configured };
    return { outcome: 'failed', ...texts, error, ...configured };
  }

  #step(name: string): void {
    this.#job.onStep(name);
  }

  /**
   * Active/active without features.jwt: the first action that takes the node's provisioning lock
   * would be configure, after the helper ran. `jwt` is read-only and locked, so asking for it first
   * makes the lock decide before the helper runs. go-choria takes the lock before the action looks
   * at anything, so a refusal (a node without a provisioning token) still claimed it.
   */
  async #takeNodeLock(): Promise<void> {
    if (nodeHasFeature(this.#job.reportedVersion, 'provisioningLock') === false) return; // nothing to claim
    this.#step('lock');
    await readStep(this.#ctx, {
      agent: 'choria_provision',
      action: 'jwt',
      data: { token: this.#deps.config.token },
      parse: () => 'claimed' as const,
      answer: (err) => (err instanceof RpcStatusError ? ('claimed' as const) : undefined),
    });
  }

  async #fetchJwt(): Promise<void> {
    this.#step('jwt');
    const cfg = this.#deps.config;
    const reply = await readStep(this.#ctx, {
      agent: 'choria_provision',
      action: 'jwt',
      data: { token: cfg.token },
      parse: parseJwtReply,
    });
    try {
      const claims = this.#keys.verify(reply.jwt, cfg.jwtVerifyCert);
      this.#facts.jwtClaims = claimsForHelper(claims) as HelperJwtClaims;
      this.#secrets.add(this.#facts.jwtClaims.cht, this.#facts.jwtClaims.chpwd);
    } catch (err) {
      throw new Error(`could not validate JWT: ${this.identity}: ${errorText(err)}`, { cause: err });
    }
    this.#facts.ecdhPublic = reply.ecdhPublic;
  }

  async #fetchEd25519(): Promise<void> {
    this.#step('gen25519');
    const needs = 'features.ed25519 (choria_provision#gen25519)';
    const version = this.#job.reportedVersion;
    if (nodeHasFeature(version, 'gen25519') === false)
      throw new NodeReleaseError(this.identity, 'gen25519', `runs go-choria ${version ?? ''}`, needs);
    const nonce = newRequestId();
    const data = { nonce, token: this.#deps.config.token };
    let reply: Ed25519Reply;
    try {
      reply = await readStep(this.#ctx, {
        agent: 'choria_provision',
        action: 'gen25519',
        data,
        parse: parseEd25519Reply,
      });
    } catch (err) {
      if (err instanceof StepFailedError && err.last instanceof RpcUnknownActionError) {
        throw new NodeReleaseError(
          this.identity,
          'gen25519',
          `answered "${publicStatusMessage(err.last.reply.statusmsg)}"`,
          needs,
        );
      }
      throw err;
    }
    try {
      verifyNonceSignature(reply, nonce);
    } catch (err) {
      throw new Error(`could not fetch ed25519 public key: ${errorText(err)}`, { cause: err });
    }
    this.#facts.ed25519 = { public_key: reply.public_key, directory: reply.directory, signature: reply.signature };
  }

  async #fetchInventory(): Promise<void> {
    this.#step('inventory');
    this.#facts.inventory = await readStep(this.#ctx, {
      agent: 'rpcutil',
      action: 'inventory',
      data: {},
      parse: parseInventoryReply,
    });
  }

  async #fetchCsr(): Promise<void> {
    this.#step('gencsr');
    const cfg = this.#deps.config;
    const data = { cn: this.identity, token: cfg.token };
    const reply = await readStep(this.#ctx, {
      agent: 'choria_provision',
      action: 'gencsr',
      data,
      parse: parseCsrReply,
    });
    if (reply.csr === '') throw new Error(`could not provision ${this.identity}: no CSR received`);
    try {
      validateCsr(reply.csr, this.identity, cfg.certDenyList);
    } catch (err) {
      throw new Error(`could not provision ${this.identity}: ${errorText(err)}`, { cause: err });
    }
    this.#facts.csr = { csr: reply.csr, public_key: reply.public_key, ssldir: reply.ssldir };
  }

  async #runHelper(): Promise<HelperReply> {
    this.#step('helper');
    if (this.#deps.pause.paused) throw pausedError('helper');
    if (this.#job.signal.aborted) throw abortError(this.#job.signal, 'helper');
    const request: HelperRequest = {
      identity: this.identity,
      csr: this.#facts.csr,
      ed25519_pubkey: this.#facts.ed25519,
      inventory: this.#facts.inventory?.text ?? '{}',
      jwt: this.#facts.jwtClaims,
    };
    const started = performance.now();
    try {
      const result = await this.#deps.helper.run(request, { identity: this.identity, signal: this.#job.signal });
      this.#deps.metrics.helperTime((performance.now() - started) / 1000);
      // what the helper returned that is secret: blanked wherever the node echoes it back
      this.#secrets.add(...secretValuesOf(result.reply.configuration), result.reply.key);
      // runners redact stderr; this blanks the secrets only this attempt knows of as well
      if (result.stderr.trim() !== '')
        this.#log.info(`Helper stderr for ${this.identity}: ${this.#mask(redactSecrets(result.stderr.trimEnd()))}`);
      for (const w of replyWarnings(result.reply)) this.#log.warn(`Helper reply for ${this.identity}: ${w}`);
      return result.reply;
    } catch (err) {
      this.#deps.metrics.helperTime((performance.now() - started) / 1000);
      if (this.#job.signal.aborted) throw abortError(this.#job.signal, 'helper');
      this.#deps.metrics.helperError();
      const stderr = (err as { stderr?: unknown }).stderr;
      if (typeof stderr === 'string' && stderr.trim() !== '')
        this.#log.warn(`Helper stderr for ${this.identity}: ${this.#mask(redactSecrets(stderr.trimEnd()))}`);
      throw err;
    }
  }

  async #shutdown(reply: HelperReply): Promise<HostResult> {
    this.#step('shutdown');
    const said = this.#mask(redactSecrets(reply.msg ?? ''));
    this.#log.warn(`Shutting down ${this.identity} on request of the helper: ${said}`);
    const done = await changeStep(this.#ctx, {
      agent: 'choria_provision',
      action: 'shutdown',
      data: { token: this.#deps.config.token },
      parse: ignoreReply,
    });
    this.#deps.metrics.helperShutdownRequest();
    const lost = done.replied ? '' : '; the shutdown reply was lost, but the node left provisioning mode';
    return { outcome: 'shutdown', message: helperAskedText(HELPER_ASKED.shutdown, said) + lost, ...helperSaid(said) };
  }

  /**
   * The dry run's end: the checks that precede sending (server token, key encryption, a non-empty
   * configuration) are made, and what would have been sent is described by names and counts only:
   * configuration values, keys and tokens may be secrets.
   */
  #wouldSend(reply: HelperReply): HostResult {
    if (reply.shutdown === true)
      return { outcome: 'dry_run', message: 'dry run: would shut the node down (choria_provision#shutdown)' };
    const cfg = this.#deps.config;
    const parts: string[] = [];
    if (cfg.features.ed25519) {
      this.#mintServerJwt(reply);
      parts.push('a server JWT');
    }
    if (this.#encryptKey(reply).key !== '') parts.push('an encrypted private key');
    const configuration = this.#configurationOf(reply);
    if (reply.certificate !== undefined && reply.certificate !== '') parts.push('a certificate');
    if (reply.ca !== undefined && reply.ca !== '') parts.push('a CA');
    const policies = Object.keys(reply.action_policies ?? {}).length + Object.keys(reply.opa_policies ?? {}).length;
    if (policies > 0) parts.push(`${policies} policies`);
    const settings = `${Object.keys(configuration).length} settings (${Object.keys(configuration).sort().join(', ')})`;
    const upgrade = this.#wantsUpgrade(reply) ? `choria_provision#release_update to ${reply.upgrade ?? ''}, then ` : '';
    return {
      outcome: 'dry_run',
      message:
        `dry run: would send ${upgrade}choria_provision#configure with ${[settings, ...parts].join(', ')}, ` +
        `then choria_provision#restart`,
    };
  }

  /** The helper's configuration; an empty one fails fast instead of being sent five times for the node to refuse. */
  #configurationOf(reply: HelperReply): Readonly<Record<string, string>> {
    const configuration = reply.configuration ?? {};
    if (Object.keys(configuration).length === 0)
      throw new Error(`could not configure ${this.identity}: the helper returned an empty configuration`);
    return configuration;
  }

  #wantsUpgrade(reply: HelperReply): boolean {
    return this.#deps.config.features.upgrades && reply.upgrade !== undefined && reply.upgrade !== '';
  }

  /**
   * `updating` when the node was told to update (configuration then happens on its next pass),
   * `back` when it is known to run the new version in provisioning mode already (its reply and
   * events lost), `not_needed` when it runs the version already or may skip the update.
   */
  async #upgrade(reply: HelperReply): Promise<'updating' | 'back' | 'not_needed'> {
    const cfg = this.#deps.config;
    const target = reply.upgrade ?? '';
    const current = this.#facts.inventory?.version ?? '';
    if (rpmVersionCompare(current, target) === 0) {
      this.#log.debug(`${this.identity} already runs version ${target}, no update needed`);
      return 'not_needed';
    }
    const problem =
      cfg.upgradesRepository === ''
        ? `cannot update ${this.identity} to ${target}: no upgrades_repository configured`
        : current === ''
          ? `cannot update ${this.identity} to ${target}: the node did not report its version`
          : this.#facts.inventory?.upgradable !== true
            ? `cannot update ${this.identity} from ${current} to ${target}: the node does not allow version updates`
            : undefined;
    if (problem !== undefined) {
      if (cfg.upgradesOptional) {
        this.#log.warn(`${problem}; continuing because upgrades_optional is set`);
        return 'not_needed';
      }
      throw new Error(problem);
    }
    this.#step('release_update');
    this.#log.warn(`Will attempt version update from ${current} to ${target}`);
    try {
      const data = { repository: cfg.upgradesRepository, token: cfg.token, version: target };
      const done = await changeStep(this.#ctx, {
        agent: 'choria_provision',
        action: 'release_update',
        data,
        parse: ignoreReply,
      });
      if (!done.replied)
        this.#log.info(`The release_update reply from ${this.identity} was lost, but the node acted on it`);
      if (!done.replied && done.back) return 'back';
    } catch (err) {
      if (cfg.upgradesOptional && !(err instanceof LockedElsewhereError) && !this.#job.signal.aborted) {
        this.#log.warn(
          `Version update of ${this.identity} failed, continuing because upgrades_optional is set: ` +
            `${failureTexts(err, this.#mask).message}`,
        );
        return 'not_needed';
      }
      throw err;
    }
    return 'updating';
  }

  #mintServerJwt(reply: HelperReply): string {
    this.#step('server_jwt');
    const cfg = this.#deps.config;
    const ed = this.#facts.ed25519;
    return mintServerToken({
      identity: this.identity,
      publicKeyHex: ed?.public_key ?? '',
      signingKeyPath: cfg.jwtSigningKey,
      ...(cfg.jwtSigningToken !== '' ? { signingTokenPath: cfg.jwtSigningToken } : {}),
      defaultValidityMs: cfg.serverJwtValidityMs,
      configuration: reply.configuration ?? {},
      serverClaims: parseServerClaims(reply.server_claims ?? null),
      onWarning: (w: string) => this.#log.warn(`Server JWT for ${this.identity}: ${w}`),
      keys: this.#signing,
    });
  }

  #encryptKey(reply: HelperReply): { key: string; ecdhPublic: string } {
    if (reply.key === undefined || reply.key === '') return { key: '', ecdhPublic: '' };
    this.#step('encrypt_key');
    const out = encryptKeyForNode(reply.key, this.#facts.ecdhPublic);
    return { key: out.pem, ecdhPublic: out.ecdhPublicHex };
  }

  /** 'unsure': the reply was lost with the broker and nothing shows whether it was applied. */
  async #configure(
    ctx: StepContext,
    { reply, configuration, serverJwt, key }: ConfigureInput,
  ): Promise<'configured' | 'unsure'> {
    this.#step('configure');
    const data: Record<string, unknown> = {
      token: this.#deps.config.token,
      config: JSON.stringify(configuration),
      ca: reply.ca ?? '',
      certificate: reply.certificate ?? '',
      // The CSR's ssldir always wins: that is where the node keeps the private key.
      ssldir: this.#facts.csr?.ssldir ?? reply.ssldir ?? '',
      key: key.key,
      ecdh_public: key.ecdhPublic,
      action_policies: { ...(reply.action_policies ?? {}) },
      opa_policies: { ...(reply.opa_policies ?? {}) },
      server_jwt: serverJwt,
    };
    // from the moment it may go out the node may be configured: an attempt that ends now, however,
    // leaves the next one a restart first (refused harmlessly by a node that did not take it)
    this.#configured = true;
    const done = await changeStep(ctx, { agent: 'choria_provision', action: 'configure', data, parse: ignoreReply });
    if (done.replied) return 'configured';
    if (done.finding === 'acted')
      this.#log.info(
        `The configure reply from ${this.identity} was lost, but its provisioned event shows it was configured`,
      );
    return done.finding === 'acted' ? 'configured' : 'unsure';
  }

  /**
   * A restart for a node that may already be configured (its configure reply was lost with the
   * broker, or an earlier attempt configured it but could not restart it). go-choria restarts
   * only a node whose configuration file exists, parses and no longer enables provisioning; it
   * aborts (status 1) otherwise, with one of several texts. Any abort here therefore means "not
   * configured": the caller configures the node, so configure is never sent twice to a node that
   * has its configuration, and a refused restart is never sent again. False when it was refused.
   */
  async #restartConfigured(ctx: StepContext): Promise<boolean> {
    this.#step('restart');
    try {
      await this.#sendRestart(ctx);
      return true;
    } catch (err) {
      if (err instanceof StepFailedError && err.last instanceof RpcAbortedError) {
        this.#configured = false;
        this.#log.info(
          `${this.identity} refused the restart (${this.#mask(publicStatusMessage(err.last.reply.statusmsg))}): ` +
            `it does not have its configuration, configuring it`,
        );
        return false;
      }
      throw err;
    }
  }

  /** True when the node answered; false when its reply was lost but it left provisioning mode. */
  async #restart(ctx: StepContext): Promise<boolean> {
    this.#step('restart');
    return (await this.#sendRestart(ctx)).replied;
  }

  /** The restart step itself (splay 1, as upstream). */
  #sendRestart(ctx: StepContext): Promise<StepResult<undefined>> {
    const data = { splay: 1, token: this.#deps.config.token };
    return changeStep(ctx, { agent: 'choria_provision', action: 'restart', data, parse: ignoreReply });
  }
}
