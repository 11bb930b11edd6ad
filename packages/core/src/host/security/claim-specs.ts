// The vocabulary of Choria tokens (the tokens library): the organisation default, the chain
// issuer prefix and, as Go-decoding types, the claims of each token type the provisioner reads.

/** The organisation (`ou`) of a token that names none. */
export const DEFAULT_ORG = 'choria';
/** A chain-issued token's `iss` is `C-<issuer jti>.<issuer public key>`. */
export const CHAIN_ISSUER_PREFIX = 'C-';

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

/** The provisioning token a node presents (`choria_provision#jwt`). */
export const PROVISIONING_CLAIMS_SPEC = {
  cht: 'string',
  chs: 'bool',
  chu: 'string',
  chsrv: 'string',
  chpd: 'bool',
  chrd: 'string',
  chf: 'string',
  chusr: 'string',
  chpwd: 'string',
  extensions: 'map',
  ou: 'string',
  v2: 'bool',
  update: 'bool',
  purpose: 'string',
  ...CHORIA_STANDARD_CLAIMS,
} as const;

// The standard claims of the chain issuer's client token, plus the client fields whose types Go checks.
export const CLIENT_ID_CLAIMS_SPEC = {
  callerid: 'string',
  agents: 'stringArray',
  ou: 'string',
  user_properties: 'map',
  opa_policy: 'string',
  permissions: 'map',
  pub_subjects: 'stringArray',
  sub_subjects: 'stringArray',
  purpose: 'string',
  ...CHORIA_STANDARD_CLAIMS,
} as const;
