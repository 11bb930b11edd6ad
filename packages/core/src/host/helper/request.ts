// The helper request document, serialised exactly as the Go provisioner's `json.Marshal(host)`
// writes it (util/go-json.ts says why the bytes matter).
import { goJsonStringify } from '../../util/go-json.js';
import type { HelperRequest } from './types.js';

/**
 * The request document for the helper's stdin: always the five keys in Go struct order
 * (identity, csr, ed25519_pubkey, inventory, jwt), `null` for disabled features, the inventory
 * as a JSON string. The result contains no raw newline, so it is also a valid JSON-lines record.
 */
export function encodeHelperRequest(req: HelperRequest): string {
  const ordered = {
    identity: req.identity,
    csr: req.csr ? { csr: req.csr.csr, public_key: req.csr.public_key, ssldir: req.csr.ssldir } : null,
    ed25519_pubkey: req.ed25519_pubkey
      ? {
          public_key: req.ed25519_pubkey.public_key,
          directory: req.ed25519_pubkey.directory,
          signature: req.ed25519_pubkey.signature,
        }
      : null,
    inventory: req.inventory,
    jwt: req.jwt ?? null,
  };
  return goJsonStringify(ordered);
}
