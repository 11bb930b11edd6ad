// Security building blocks of one node's provisioning: keys, tokens, nonce, key transport, CSRs.
export {
  loadSigningKey,
  loadVerificationKey,
  parseSigningKeyFile,
  parseVerificationKeyFile,
  type SigningKey,
  type VerificationKey,
} from './keys.js';
export {
  claimsForHelper,
  ProvisioningTokenError,
  verifyProvisioningToken,
  verifyProvisioningTokenWithKey,
  VerifiedTokens,
  type ProvisioningClaims,
  type VerifyOptions,
} from './provisioning-jwt.js';
export { mintServerToken, SigningKeyCache, type MintServerTokenInput } from './server-jwt.js';
export {
  parseServerClaims,
  ServerClaimsError,
  type ServerClaimsInput,
  type ServerPermissions,
} from './server-claims.js';
export { verifyNonceSignature } from './nonce.js';
export {
  decryptLegacyPem,
  encryptKeyForNode,
  encryptLegacyPem,
  legacyPemKey,
  x25519PublicFromPrivate,
  x25519SharedSecret,
  type EncryptedKey,
  type EncryptKeyOptions,
} from './ecdh-pem.js';
export { compileDenyList, matchesDenyList, parseCsr, validateCsr, type CsrNames, type DenyList } from './csr.js';
export { decodeFirstPemBlock, encodePem, type PemBlock } from './pem.js';
export { ACCEPTED_ALGORITHMS, JwtError, type JwtAlgorithm } from './jwt-compact.js';
