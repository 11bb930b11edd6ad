// A site's credential renewals as a part of its Provisioner: the client on the fleet's own
// collective (the provisioning account cannot reach provisioned servers), the renewer and the timer
// that has it look at the site's nodes. The client comes from the Choria client configuration the
// operator names in `renewal_choria_config`, as it is: none of the provisioning overrides apply but
// the site's `choria_insecure`, which means plain connections for all of a site's.
import type { Logger } from 'winston';
import { ChoriaClient } from '../../choria/client.js';
import { NodeProbe } from '../../host/node-probe.js';
import { RpcReplyLostError, RpcStatusError, RpcTimeoutError, publicStatusMessage } from '../../choria/errors.js';
import { applyChoriaInsecure, loadChoriaConfig } from '../../config/choria-config.js';
import type { RenewalSettings } from '../../config/types.js';
import type { ProvisionerMetrics } from '../../metrics/metrics.js';
import { publicMessageOf } from '../../util/errors.js';
import { errorText } from '../../util/values.js';
import type { NodeHistory, SiteRecordBacking } from '../history/index.js';
import { Renewer, type FleetAnswer, type RenewalView, type ReprovisionAnswer } from './renewer.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { RoundStore } from './round.js';

/** How often the renewer looks at the site's nodes. */
export const RENEWAL_TICK_MS = 1_000;
/** How long a node has to answer a ping on the fleet's collective (a lost `reprovision`). */
const FLEET_PING_MS = 5_000;
/** How long the broker has to answer a round trip for a node's silence to count. */
const BROKER_RTT_MS = 2_000;

export interface SiteRenewalsOptions {
  readonly settings: RenewalSettings;
  /** the site's provisioning token: go-choria checks it on `reprovision` too */
  readonly token: string;
  /** the site's `choria_insecure` */
  readonly insecure: boolean;
  readonly history: NodeHistory;
  /** a record of the whole site in the shared history bucket, once there is one (the renewal round) */
  readonly siteRecord: (name: string) => SiteRecordBacking | undefined;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly mayRenew: (identity: string) => boolean;
  readonly dryRun: boolean;
  /** an already connected client on the fleet's collective; stop() leaves it open */
  readonly client?: ChoriaClient;
  readonly signal: AbortSignal;
}

/** `reprovision` to one node through `client`, its answer in the renewer's terms. */
export async function reprovisionThrough(
  client: ChoriaClient,
  identity: string,
  token: string,
): Promise<ReprovisionAnswer> {
  try {
    await client.rpc(identity, 'choria_provision', 'reprovision', { token });
    return { kind: 'accepted' };
  } catch (err) {
    if (err instanceof RpcTimeoutError || err instanceof RpcReplyLostError)
      return { kind: 'no-reply', reason: publicMessageOf(err) };
    // go-choria's own reason (wrong token, not authorized, already provisioning, ...), as the monitor
    // port may show a node's text, and without the node's name: the status shows why to anyone
    if (err instanceof RpcStatusError)
      return {
        kind: 'refused',
        reason: `${publicStatusMessage(err.reply.statusmsg)} (status ${err.reply.statuscode})`,
      };
    return { kind: 'refused', reason: publicMessageOf(err) };
  }
}

export class SiteRenewals {
  readonly #opts: SiteRenewalsOptions;
  readonly renewer: Renewer;
  #client: ChoriaClient | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** the site's renewal round, shared through the history bucket once it is reached */
  readonly #round = new RoundStore();

  constructor(opts: SiteRenewalsOptions) {
    this.#opts = opts;
    this.#client = opts.client;
    this.renewer = new Renewer({
      round: this.#round,
      settings: opts.settings,
      history: opts.history,
      logger: opts.logger,
      metrics: opts.metrics,
      mayRenew: (identity) => this.#client !== undefined && opts.mayRenew(identity),
      reprovision: (identity) =>
        this.#client === undefined
          ? Promise.resolve({ kind: 'refused', reason: 'no connection to the fleet' })
          : reprovisionThrough(this.#client, identity, opts.token),
      answersOnFleet: (identity) => this.#answersOnFleet(identity),
      dryRun: opts.dryRun,
    });
  }

  /** Connects to the fleet (unless given a client or in a dry run) and starts looking at the nodes. */
  async start(): Promise<void> {
    this.#timer = setInterval(() => {
      const shared = this.#round.attached ? undefined : this.#opts.siteRecord('renewals');
      if (shared !== undefined) this.#round.attach(shared);
      this.renewer.tick();
    }, RENEWAL_TICK_MS);
    if (this.#client !== undefined || this.#opts.dryRun) return;
    const { settings, logger } = this.#opts;
    try {
      const choria = applyChoriaInsecure(loadChoriaConfig(settings.choriaConfig), this.#opts.insecure);
      this.#client = await ChoriaClient.connect(choria, {
        logger: logger.child({ part: 'renewals' }),
        name: 'choria-provisioner renewals',
        collective: choria.mainCollective,
        signal: this.#opts.signal,
      });
      logger.info(`Renewals reach the fleet on collective ${choria.mainCollective} as ${choria.identity}`);
    } catch (err) {
      if (this.#opts.signal.aborted) return;
      logger.error(`Renewals are off: could not connect with ${settings.choriaConfig}: ${errorText(err)}`);
    }
  }

  /**
   * Whether the node answers a ping on the fleet's collective. Its silence counts only when this
   * client's own way to the broker works (settled, and the broker answers a round trip at once):
   * on a silent path every node would seem gone.
   */
  async #answersOnFleet(identity: string): Promise<FleetAnswer> {
    const client = this.#client;
    if (client === undefined || !client.link.settled) return 'unknown';
    const ping = await new NodeProbe(client, identity, this.#opts.signal).ping(FLEET_PING_MS);
    if (ping === 'answered') return 'answers';
    const broker = await Promise.race([
      client.nats.rtt().then(
        () => true,
        () => false,
      ),
      sleep(BROKER_RTT_MS, undefined, { ref: false }).then(() => false),
    ]);
    return broker && client.link.settled ? 'silent' : 'unknown';
  }

  view(limit: number): RenewalView {
    return this.renewer.view(limit);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.renewer.settled();
    if (this.#opts.client === undefined) await this.#client?.close().catch(() => undefined);
    this.#client = undefined;
  }
}
