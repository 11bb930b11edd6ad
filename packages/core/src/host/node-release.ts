// What a node can do, from the go-choria version it reports (`rpcutil#inventory` and its startup
// event carry it). go-choria versions are semver, and a feature belongs to the release that brought
// it, so this is a semver question (compare-versions). Upgrades compare versions the RPM way
// instead (util/rpmvercmp.ts), because that is what upstream does for `release_update`.
import { compare, validate } from 'compare-versions';
import { ProvisionerError } from '../util/errors.js';

/** The go-choria releases that brought what the provisioner relies on. */
export const NODE_FEATURE_RELEASES = {
  /** choria_provision#gen25519 and configure's `server_jwt` (go-choria #1522) */
  gen25519: '0.25.0',
  /** the 2-minute provisioning lock per `senderid.callerid` (go-choria #2110) */
  provisioningLock: '0.29.0',
} as const;

export type NodeFeature = keyof typeof NODE_FEATURE_RELEASES;

/**
 * true or false when `version` is a release number, undefined when it says nothing (absent, empty,
 * a development build): the provisioner then asks and reads the answer, as before.
 */
export function nodeHasFeature(version: string | undefined, feature: NodeFeature): boolean | undefined {
  if (version === undefined || !validate(version)) return undefined;
  return compare(version, NODE_FEATURE_RELEASES[feature], '>=');
}

/** The node's release lacks something the site's configuration needs: retrying cannot help. */
export class NodeReleaseError extends ProvisionerError {
  /**
   * @param evidence how it is known: `runs go-choria 0.24.1`, or the node's own answer
   * @param needs the setting that needs the feature, e.g. `features.ed25519`
   */
  constructor(
    readonly identity: string,
    readonly feature: NodeFeature,
    evidence: string,
    needs: string,
  ) {
    super(`${identity} ${evidence}: ${needs} needs go-choria ${NODE_FEATURE_RELEASES[feature]} or newer`);
  }
}
