// The request signer abstraction: one implementation per security provider.
import type { ProtocolVersion, RequestSigning } from '../protocol/types.js';

export type SignerKind = 'insecure' | 'file' | 'choria';

export interface RequestSigner extends RequestSigning {
  readonly kind: SignerKind;
  readonly protocol: ProtocolVersion;
  /** the caller id placed in requests; its md5 names the reply subjects */
  readonly callerId: string;
}

/** v1 caller id of an x509 client: `choria=<certname>`. */
export function x509CallerId(certname: string): string {
  return `choria=${certname}`;
}
