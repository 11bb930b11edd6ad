// PEM blocks with Go encoding/pem semantics (first block wins, text around it ignored, headers kept).
// Node's crypto only decodes PEM it also parses as a key; the provisioner needs the raw block
// (CSR bytes, a helper key re-labelled `RSA PRIVATE KEY`, legacy encryption headers), so this is
// a small port of the format, not of any key parser.

export interface PemBlock {
  type: string;
  headers: Map<string, string>;
  bytes: Buffer;
}

const BEGIN = '-----BEGIN ';
const END = '\n-----END ';
const DASHES = '-----';
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The first well-formed PEM block in `text`, or null when there is none. */
export function decodeFirstPemBlock(text: string | Buffer): PemBlock | null {
  const data = typeof text === 'string' ? text : text.toString('latin1');
  let rest = data;
  for (;;) {
    if (rest.startsWith(BEGIN)) {
      rest = rest.slice(BEGIN.length);
    } else {
      const at = rest.indexOf(`\n${BEGIN}`);
      if (at < 0) return null;
      rest = rest.slice(at + 1 + BEGIN.length);
    }

    let typeLine: string;
    [typeLine, rest] = takeLine(rest);
    if (!typeLine.endsWith(DASHES)) continue;
    const type = typeLine.slice(0, -DASHES.length);

    const headers = new Map<string, string>();
    let truncated = false;
    for (;;) {
      if (rest.length === 0) {
        truncated = true;
        break;
      }
      const [line, next] = takeLine(rest);
      const colon = line.indexOf(':');
      if (colon < 0) break;
      headers.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      rest = next;
    }
    if (truncated) return null;

    let endIndex: number;
    let trailerIndex: number;
    if (headers.size === 0 && rest.startsWith(END.slice(1))) {
      endIndex = 0;
      trailerIndex = END.length - 1;
    } else {
      endIndex = rest.indexOf(END);
      trailerIndex = endIndex + END.length;
    }
    if (endIndex < 0) continue;

    const trailerLength = type.length + DASHES.length;
    const trailer = rest.slice(trailerIndex, trailerIndex + trailerLength);
    if (trailer.length < trailerLength || trailer !== `${type}${DASHES}`) continue;
    const [restOfEndLine] = takeLine(rest.slice(trailerIndex + trailerLength));
    if (restOfEndLine.length !== 0) continue;

    const body = rest.slice(0, endIndex).replace(/[ \t\r\n]/g, '');
    if (!STRICT_BASE64.test(body)) continue;
    return { type, headers, bytes: Buffer.from(body, 'base64') };
  }
}

/**
 * PEM text as Go's pem.Encode writes it: `Proc-Type` first, other headers sorted, 64-character lines, final newline.
 */
export function encodePem(block: { type: string; headers?: ReadonlyMap<string, string>; bytes: Uint8Array }): string {
  const lines = [`-----BEGIN ${block.type}-----`];
  const headers = block.headers ?? new Map<string, string>();
  if (headers.size > 0) {
    const procType = headers.get('Proc-Type');
    if (procType !== undefined) lines.push(`Proc-Type: ${procType}`);
    for (const key of [...headers.keys()].filter((k) => k !== 'Proc-Type').sort()) {
      lines.push(`${key}: ${headers.get(key) ?? ''}`);
    }
    lines.push('');
  }
  const body = Buffer.from(block.bytes).toString('base64');
  for (let i = 0; i < body.length; i += 64) lines.push(body.slice(i, i + 64));
  lines.push(`-----END ${block.type}-----`);
  return `${lines.join('\n')}\n`;
}

// Go's getLine: the text up to the next "\n" with trailing spaces, tabs and CRs removed, and the remainder.
function takeLine(text: string): [string, string] {
  const nl = text.indexOf('\n');
  const line = nl < 0 ? text : text.slice(0, nl);
  const rest = nl < 0 ? '' : text.slice(nl + 1);
  return [line.replace(/[ \t\r]+$/, ''), rest];
}
