// Unsigned-looking client JWTs for tests: the client only decodes them (the broker verifies).
export function fakeJwt(claims: Record<string, unknown>): string {
  const part = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part({ alg: 'EdDSA', typ: 'JWT' })}.${part(claims)}.${Buffer.from('not-a-real-signature').toString('base64url')}`;
}
