// Base64 with Go's encoding/base64 StdEncoding semantics. Node's Buffer.from(s, 'base64') accepts
// anything (URL alphabet, missing padding, garbage), but go-choria servers decode with the strict
// standard decoder, and the server's "try to decode the payload" rule depends on exactly which strings
// Go considers valid base64 (e.g. "ping" is valid and decodes to three bytes).

const STD_ALPHABET = /^[A-Za-z0-9+/]*$/;

/**
 * Decodes standard, padded base64 the way Go's `base64.StdEncoding.DecodeString` does: CR and LF are
 * ignored anywhere, the length must be a multiple of 4, `=` only as 1-2 trailing padding characters.
 * Returns undefined when Go would return an error.
 */
export function goStdBase64Decode(input: string): Buffer | undefined {
  const s = input.includes('\r') || input.includes('\n') ? input.replace(/[\r\n]/g, '') : input;
  if (s.length % 4 !== 0) return undefined;
  let body = s;
  if (body.endsWith('==')) body = body.slice(0, -2);
  else if (body.endsWith('=')) body = body.slice(0, -1);
  if (!STD_ALPHABET.test(body)) return undefined;
  return Buffer.from(s, 'base64');
}

export function stdBase64Encode(data: Uint8Array | string): string {
  return (typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data)).toString('base64');
}
