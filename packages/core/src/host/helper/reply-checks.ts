// Checks on a valid reply that catch the classic helper mistakes before anything is sent to the
// node. Most are warnings. What the node's configure action would refuse is an error instead, found
// before any RPC: an empty configuration (upstream sent it five times for the node to refuse each
// time), and policy file names go-choria does not accept (it writes the new configuration first,
// then refuses the policies, leaving a node that comes up provisioned without them at its next boot).
import { HelperReplyError, publicKeyName } from './errors.js';
import type { HelperReply } from './types.js';

const PROVISION_KEY = 'plugin.choria.server.provision';

/** Ten years of seconds: an `exp` below this is a date before ~1980, i.e. a relative duration. */
export const RELATIVE_EXP_LIMIT = 10 * 365 * 24 * 3600;

/** The provisioner ignores a server-token lifetime of one hour or less. */
const MIN_VALIDITY_SECONDS = 3600;

export interface ReplyWarningOptions {
  /** current Unix time in seconds (for the `exp` check); default now */
  readonly nowSeconds?: number;
}

/** Human-readable warnings about a validated reply; empty when nothing looks wrong. */
export function replyWarnings(reply: HelperReply, opts: ReplyWarningOptions = {}): string[] {
  const warnings: string[] = [];
  const willConfigure = reply.defer !== true && reply.shutdown !== true;

  if (willConfigure && reply.configuration !== undefined && Object.keys(reply.configuration).length > 0) {
    const provision = reply.configuration[PROVISION_KEY];
    if (provision === undefined) {
      warnings.push(
        `configuration does not set ${PROVISION_KEY}; set it to "false", otherwise nodes whose provisioning token ` +
          `has --default come straight back into provisioning after the restart`,
      );
    } else if (provision !== 'false') {
      warnings.push(
        `configuration sets ${PROVISION_KEY} to ${JSON.stringify(provision)}; ` +
          `set it to "false", otherwise the node may refuse to restart or stay in provisioning mode`,
      );
    }
  }

  const exp = reply.server_claims?.exp;
  if (exp !== undefined) {
    const nowSeconds = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
    if (exp < RELATIVE_EXP_LIMIT) {
      const year = new Date(exp * 1000).getUTCFullYear();
      warnings.push(
        `server_claims.exp is ${exp}, a date in ${year}: exp must be an absolute Unix time, ` +
          `not a number of seconds from now; the value will be ignored and the default server_jwt_validity used`,
      );
    } else if (exp - nowSeconds <= MIN_VALIDITY_SECONDS) {
      warnings.push(
        `server_claims.exp ${exp} is in the past or less than 1 hour away; ` +
          `the value will be ignored and the default server_jwt_validity used`,
      );
    }
  }

  return warnings;
}

/**
 * Throws when the reply cannot configure a node because its configuration is empty (the node's
 * configure action would refuse it). Call it for replies that neither defer nor shut down,
 * before any RPC, so the attempt fails fast instead of being retried over the network.
 */
export function assertConfigurable(reply: HelperReply, identity?: string): void {
  if (reply.configuration === undefined || Object.keys(reply.configuration).length === 0) {
    const node = identity === undefined ? 'the node' : identity;
    throw new HelperReplyError(
      'invalid-reply',
      `configuration is empty, so there is nothing to configure on ${node}; ` +
        `the reply must at least set ${PROVISION_KEY} to "false" (or set "defer": true to retry later)`,
    );
  }
}

/** The file name endings go-choria's configure action accepts for each kind of policy. */
const POLICY_ENDINGS = [
  { key: 'action_policies', ending: '.policy', kind: 'Action Policies' },
  { key: 'opa_policies', ending: '.rego', kind: 'Open Policy Agent policies' },
] as const;

/**
 * Throws when the node's configure action would refuse the reply part way: a policy file name
 * without the ending go-choria requires. go-choria writes the new server.conf before it looks at
 * the policies, so such a reply would leave the node half configured. Call it before any RPC.
 */
export function assertAcceptedByNode(reply: HelperReply, identity?: string): void {
  const node = identity === undefined ? 'the node' : identity;
  for (const { key, ending, kind } of POLICY_ENDINGS) {
    for (const name of Object.keys(reply[key] ?? {})) {
      if (!name.endsWith(ending)) {
        const why = (shown: string): string =>
          `${key} key ${shown} does not end in "${ending}": go-choria refuses ${kind} with any other name ` +
          `(after writing the new configuration), so nothing was sent to ${node}`;
        throw new HelperReplyError('invalid-reply', why(JSON.stringify(name)), why(publicKeyName(name)));
      }
    }
  }
}
