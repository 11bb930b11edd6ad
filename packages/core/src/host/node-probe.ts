// The one way to ask a node about itself without changing it, and the one rule of what its
// silence means. A probe answers four questions: is the node present (a broadcast discovery with
// its identity, which a node still in provisioning mode answers), does it answer a ping, is its
// provisioning agent busy, and which go-choria version it runs. Silence is `noReplyCame`: the
// request timed out or its reply was lost with the broker. Any other failure is an answer of sorts
// (a refusal means the node is connected), except an abort or a closed client, which end the probe
// (thrown): nothing was learned.
import type { ChoriaClient, RpcReply } from '../choria/client.js';
import { ClientClosedError, RpcAbortError, noReplyCame } from '../choria/errors.js';
import { rpmVersionCompare } from '../util/rpmvercmp.js';
import { parseInventoryReply } from './node-replies.js';

/** What a ping found: any reply (a refusal too), or silence. */
export type PingAnswer = 'answered' | 'silent';

export class NodeProbe {
  readonly #client: ChoriaClient;
  readonly #identity: string;
  readonly #signal: AbortSignal;

  constructor(client: ChoriaClient, identity: string, signal: AbortSignal) {
    this.#client = client;
    this.#identity = identity;
    this.#signal = signal;
  }

  /** rpcutil#ping, which provisioning-mode servers serve. */
  async ping(timeoutMs: number): Promise<PingAnswer> {
    const answer = await this.#ask('rpcutil', 'ping', {}, timeoutMs);
    return answer instanceof Error && noReplyCame(answer) ? 'silent' : 'answered';
  }

  /** Whether a discovery of the provisioning agent with the node's identity finds it within `timeoutMs`. */
  async present(timeoutMs: number): Promise<boolean> {
    const found = await this.#client.discover({
      agent: 'choria_provision',
      identityFilter: [this.#identity],
      timeoutMs,
      initialWaitMs: timeoutMs,
      limit: 1,
      signal: this.#signal,
    });
    return (found as readonly string[]).includes(this.#identity);
  }

  /**
   * Whether the node's provisioning agent is still working on an earlier request. go-choria runs
   * the agent's actions one at a time under one mutex, `jwt` included; so a node that answers
   * discovery but not `jwt` within `timeoutMs` is in the middle of an action. Any answer to `jwt`
   * (its token, or a refusal) means the agent is idle. `jwt` only reads: if it runs later, nothing
   * changes.
   */
  async agentBusy(token: string, timeoutMs: number): Promise<boolean> {
    const answer = await this.#ask('choria_provision', 'jwt', { token }, timeoutMs);
    return answer instanceof Error && noReplyCame(answer);
  }

  /**
   * Whether the node reports running `version` (rpcutil#inventory, which answers outside the
   * provisioning agent's mutex). No answer, a refusal or an inventory without a version: false.
   */
  async runsVersion(version: string, timeoutMs: number): Promise<boolean> {
    const answer = await this.#ask('rpcutil', 'inventory', {}, timeoutMs);
    if (answer instanceof Error) return false;
    try {
      const reported = parseInventoryReply(answer.data).version;
      return reported !== '' && rpmVersionCompare(reported, version) === 0;
    } catch {
      return false;
    }
  }

  /** One short request: the reply, or the error that took its place (an abort or a closed client thrown). */
  async #ask(
    agent: string,
    action: string,
    data: Record<string, unknown>,
    timeoutMs: number,
  ): Promise<RpcReply | Error> {
    try {
      return await this.#client.rpc(this.#identity, agent, action, data, { timeoutMs, signal: this.#signal });
    } catch (err) {
      if (err instanceof RpcAbortError || err instanceof ClientClosedError || !(err instanceof Error)) throw err;
      return err;
    }
  }
}
