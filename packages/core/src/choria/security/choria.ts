// The `choria` provider (protocol v2): ed25519 over the Request JSON bytes, caller = client JWT.
import { sign } from 'node:crypto';
import type { ChoriaCredentials } from './choria-credentials.js';
import { loadChoriaCredentials } from './choria-credentials.js';
import type { RequestSigner } from './types.js';

export class ChoriaSigner implements RequestSigner {
  readonly kind = 'choria';
  readonly protocol = 'v2';
  readonly #credentials: ChoriaCredentials;

  constructor(credentials: ChoriaCredentials) {
    this.#credentials = credentials;
  }

  get callerId(): string {
    return this.#credentials.callerId;
  }

  /** the client JWT text (never logged) */
  get credential(): string {
    return this.#credentials.token;
  }

  static fromFiles(tokenFile: string, seedFile: string, source = '<inline>'): ChoriaSigner {
    return new ChoriaSigner(loadChoriaCredentials(tokenFile, seedFile, source));
  }

  get publicKeyHex(): string {
    return this.#credentials.publicKeyHex;
  }

  sign(requestJson: Uint8Array): string {
    return sign(null, requestJson, this.#credentials.privateKey).toString('base64');
  }
}
