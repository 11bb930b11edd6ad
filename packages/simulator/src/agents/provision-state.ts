// What one emulated server remembers between requests (and what the report shows).
import type { OkpPair } from '../crypto/keys.js';
import type { ConfigFileKind } from '../options.js';

/** Why a node is about to leave its current process life. */
export type ExitKind = 'restart' | 'update' | 'shutdown' | 'crash';

export interface ProvisionState {
  version: string;
  /** provisioning token (`cht`); empty means any token is accepted */
  token: string;
  /** provisioning JWT file text, undefined when the node has none */
  provisioningJwt: string | undefined;
  /** `update` claim / allow_update setting */
  allowUpdate: boolean;
  lock: { owner: string; expiresAtMs: number } | undefined;
  ecdh: OkpPair | undefined;
  /** public key of the last gen25519 (persists across restarts, like server.seed on disk) */
  ed25519PublicHex: string | undefined;
  /** configuration written by configure; undefined: what the node booted with (bootConfigFile) */
  configuration: Record<string, string> | undefined;
  /** the configuration file before configure wrote one: provisioning-mode settings, or none */
  bootConfigFile: ConfigFileKind;
  hasServerJwt: boolean;
  serverJwtClaims: Record<string, unknown> | undefined;
  hasCertificate: boolean;
  hasPrivateKey: boolean;
  /**
   * the public key (PEM) of the private key the last `gencsr` made: go-choria makes a new key at
   * every gencsr, so a certificate configured later must be for this one
   */
  csrPublicKeyPem: string | undefined;
  policies: { action: string[]; opa: string[] } | undefined;
  /** set once restart, release_update or shutdown was accepted: the agent mutex stays held */
  pendingExit: ExitKind | undefined;
  configuredCount: number;
  /** provisioning cycles: boots into provisioning mode after the first one count as new cycles */
  cycle: number;
  /** configure actions carried out in the current cycle, and the most in any cycle */
  configuredThisCycle: number;
  maxConfiguredPerCycle: number;
  restartCount: number;
  shutdownCount: number;
  updateCount: number;
  /** reprovision requests accepted while provisioned (a renewal sends one) */
  reprovisionCount: number;
}

export const CONFIG_FILE = '/etc/choria/server.conf';
export const CONFIG_DIR = '/etc/choria';
export const SSL_DIR = '/etc/choria/ssl';

/** The provisioning-mode configuration file every simulated node starts with. */
export const INITIAL_CONFIGURATION: Readonly<Record<string, string>> = { 'plugin.choria.server.provision': 'true' };
