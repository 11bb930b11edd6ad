// Insecure mode: no key material. Provisioning-mode servers never verify signatures.
import type { ProtocolVersion } from '../protocol/types.js';
import type { RequestSigner } from './types.js';

export const INSECURE = 'insecure';
/** base64 of the 8 bytes `insecure`: the v2 placeholder signature */
export const INSECURE_V2_SIGNATURE = Buffer.from(INSECURE, 'utf8').toString('base64');

export class InsecureSigner implements RequestSigner {
  readonly kind = 'insecure';
  readonly credential: string;

  /**
   * @param caller v2 only: the `caller` credential (the client JWT when one exists). The v2 schema
   *   requires it to be non-empty, so it defaults to the caller id.
   */
  constructor(
    readonly protocol: ProtocolVersion,
    readonly callerId: string,
    caller?: string,
  ) {
    if (callerId === '') throw new Error('insecure signer: caller id must not be empty');
    this.credential = protocol === 'v1' ? INSECURE : caller !== undefined && caller !== '' ? caller : callerId;
  }

  sign(): string {
    return this.protocol === 'v1' ? INSECURE : INSECURE_V2_SIGNATURE;
  }
}
