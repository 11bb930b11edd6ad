// Hex decoding with Go's encoding/hex rules and error texts, which upstream's messages quote.
// Buffer.from(x, 'hex') silently stops at the first bad character, so it cannot be used for input checks.

/**
 * Decodes hex (either case) or throws Go's error text:
 * `encoding/hex: invalid byte: U+002F '/'`, `encoding/hex: odd length hex string`.
 */
export function decodeHexStrict(text: string | Uint8Array): Buffer {
  // Go decodes bytes; work on the UTF-8 bytes of a string so the reported "byte" matches.
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : Buffer.from(text);
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] ?? 0;
    // Go checks complete pairs first, then (for an odd length) the dangling last byte.
    if (i === bytes.length - 1 && bytes.length % 2 === 1) break;
    if (!isHexByte(byte)) throw new Error(`encoding/hex: invalid byte: ${goRuneDescription(byte)}`);
  }
  if (bytes.length % 2 === 1) {
    const last = bytes[bytes.length - 1] ?? 0;
    if (!isHexByte(last)) throw new Error(`encoding/hex: invalid byte: ${goRuneDescription(last)}`);
    throw new Error('encoding/hex: odd length hex string');
  }
  return Buffer.from(bytes.toString('latin1'), 'hex');
}

function isHexByte(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);
}

// Go's %#U verb on a byte value: `U+0041 'A'`, or just `U+000A` when the character is not printable.
function goRuneDescription(byte: number): string {
  const code = `U+${byte.toString(16).toUpperCase().padStart(4, '0')}`;
  const printable = (byte >= 0x20 && byte < 0x7f) || (byte >= 0xa1 && byte !== 0xad);
  return printable ? `${code} '${String.fromCharCode(byte)}'` : code;
}
