// Chooses the protocol version and the signer from the Choria client settings.
import type { ChoriaSettings } from '../../config/types.js';
import type { ProtocolVersion } from '../protocol/types.js';
import { ChoriaSigner } from './choria.js';
import { callerIdFromJwt, readClientJwt } from './choria-credentials.js';
import { FileSigner } from './file.js';
import { InsecureSigner } from './insecure.js';
import { x509CallerId, type RequestSigner } from './types.js';
import { SecurityError } from '../errors.js';

export interface ProtocolSelection {
  readonly version: ProtocolVersion;
  /** sign requests (false = the `insecure` placeholders) */
  readonly secure: boolean;
  /** one sentence for logs and docs */
  readonly reason: string;
}

/**
 * A server speaks v2 exactly when its security provider is `choria`; Go provisioners pick their
 * version the same way from their own client configuration, so this mirrors that rule.
 */
export function selectProtocol(settings: ChoriaSettings): ProtocolSelection {
  if (settings.securityProvider === 'choria') {
    return {
      version: 'v2',
      secure: settings.protocolSecure,
      reason: `security provider "choria" (ed25519 + JWT) in ${settings.source} selects protocol v2`,
    };
  }
  return {
    version: 'v1',
    secure: settings.protocolSecure,
    reason:
      `security provider "${settings.securityProvider}" in ${settings.source} selects protocol ` +
      `v1${settings.protocolSecure ? '' : ' (insecure: requests are not signed)'}`,
  };
}

function certnameOf(settings: ChoriaSettings): string {
  return settings.certname !== '' ? settings.certname : settings.identity;
}

/** Loads the signer for `version` (default: selectProtocol). Reads key material synchronously. */
export function createSigner(
  settings: ChoriaSettings,
  version: ProtocolVersion = selectProtocol(settings).version,
): RequestSigner {
  if (version === 'v1') {
    if (!settings.protocolSecure || settings.securityProvider === 'choria') {
      return new InsecureSigner('v1', x509CallerId(certnameOf(settings)));
    }
    if (settings.certificateFile === undefined || settings.keyFile === undefined) {
      throw new SecurityError(
        `protocol security needs a certificate and a private key file in ${settings.source}, or set it to insecure`,
      );
    }
    return FileSigner.fromFiles(settings.certificateFile, settings.keyFile, certnameOf(settings));
  }
  const haveToken = settings.tokenFile !== undefined && settings.tokenFile !== '';
  const haveSeed = settings.seedFile !== undefined && settings.seedFile !== '';
  if (settings.protocolSecure && haveToken && haveSeed) {
    return ChoriaSigner.fromFiles(settings.tokenFile as string, settings.seedFile as string, settings.source);
  }
  if (settings.protocolSecure && settings.securityProvider === 'choria') {
    throw new SecurityError(
      `protocol v2 with protocol security needs plugin.security.choria.token_file and ` +
        `plugin.security.choria.seed_file in ${settings.source}`,
    );
  }
  // v2 servers in provisioning mode do not verify, but the schema still wants a non-empty caller
  if (haveToken) {
    const token = readClientJwt(settings.tokenFile as string);
    return new InsecureSigner('v2', callerIdFromJwt(token, settings.tokenFile as string), token);
  }
  return new InsecureSigner('v2', x509CallerId(certnameOf(settings)));
}
