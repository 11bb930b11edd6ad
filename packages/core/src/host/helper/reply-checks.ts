// Checks on a valid reply that catch the classic helper mistakes before anything is sent to the
// node (product.md §2.3, §2.5, §5.9 #6/#7): they are warnings, except an empty configuration,
// which upstream retried five times over RPC and which we refuse up front.
import { HelperReplyError } from './errors.js';
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
        `configuration does not set ${PROVISION_KEY}; set it to "false", otherwise nodes whose provisioning token has --default come straight back into provisioning after the restart`,
      );
    } else if (provision !== 'false') {
      warnings.push(
        `configuration sets ${PROVISION_KEY} to ${JSON.stringify(provision)}; set it to "false", otherwise the node may refuse to restart or stay in provisioning mode`,
      );
    }
  }

  const exp = reply.server_claims?.exp;
  if (exp !== undefined) {
    const nowSeconds = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
    if (exp < RELATIVE_EXP_LIMIT) {
      const year = new Date(exp * 1000).getUTCFullYear();
      warnings.push(
        `server_claims.exp is ${exp}, a date in ${year}: exp must be an absolute Unix time, not a number of seconds from now; the value will be ignored and the default server_jwt_validity used`,
      );
    } else if (exp - nowSeconds <= MIN_VALIDITY_SECONDS) {
      warnings.push(
        `server_claims.exp ${exp} is in the past or less than 1 hour away; the value will be ignored and the default server_jwt_validity used`,
      );
    }
  }

  for (const name of Object.keys(reply.action_policies ?? {})) {
    if (!name.endsWith('.policy')) {
      warnings.push(
        `action_policies key ${JSON.stringify(name)} does not end in ".policy"; the node writes the file but action policies are only read from <agent>.policy`,
      );
    }
  }
  for (const name of Object.keys(reply.opa_policies ?? {})) {
    if (!name.endsWith('.rego')) {
      warnings.push(
        `opa_policies key ${JSON.stringify(name)} does not end in ".rego"; the node writes the file but Open Policy Agent policies are only read from <agent>.rego or default.rego`,
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
      `configuration is empty, so there is nothing to configure on ${node}; the reply must at least set ${PROVISION_KEY} to "false" (or set "defer": true to retry later)`,
    );
  }
}
