// The claims every Choria token type shares (the tokens library's standard claims: trust chain,
// public key, issuer expiry and the registered JWT claims), as Go-decoding types. Spread last into
// each token's spec so the claim order stays the Go struct order.
export const CHORIA_STANDARD_CLAIMS = {
  tcs: 'string',
  public_key: 'string',
  issexp: 'numericDate',
  iss: 'string',
  sub: 'string',
  aud: 'claimStrings',
  exp: 'numericDate',
  nbf: 'numericDate',
  iat: 'numericDate',
  jti: 'string',
} as const;
