// RPM-style version comparison as the upstream provisioner does it.
//
// Hand-written because no package does this comparison: `compare-versions` is a semver-style
// comparator that throws on letters, `~`, `_`, epochs and `1.0-1`, treats `1.0` as `1.0.0` and
// `v0.28.0` as `0.28.0` (both different here, so an upgrade must be attempted), and orders
// pre-releases and `+build` the semver way. Real rpm semantics differ too (`^`, last-dash release
// split), so this ports the provisioner's own rules rather than rpm's.

export interface RpmVersion {
  epoch: number;
  version: string;
  release: string;
}

// Go's unicode.IsSpace set (Latin-1 spaces plus the Unicode White_Space characters).
const LEADING_GO_SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;
const GO_ATOI = /^[+-]?[0-9]+$/;
const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);
const SEGMENT = /[a-zA-Z]+|[0-9]+|~/g;

/** Splits `[epoch:]version[-release]`; a non-integer epoch counts as 0, the release starts after the first `-`. */
export function parseRpmVersion(text: string): RpmVersion {
  let rest = text;
  let epoch = 0;
  const colon = text.indexOf(':');
  if (colon >= 0) {
    epoch = parseGoInt(text.slice(0, colon).replace(LEADING_GO_SPACE, ''));
    rest = text.slice(colon + 1);
  }
  const dash = rest.indexOf('-');
  if (dash < 0) return { epoch, version: rest, release: '' };
  return { epoch, version: rest.slice(0, dash), release: rest.slice(dash + 1) };
}

/** Compares two version strings: -1 when a < b, 0 when equal, 1 when a > b. */
export function rpmVersionCompare(a: string, b: string): -1 | 0 | 1 {
  const va = parseRpmVersion(a);
  const vb = parseRpmVersion(b);
  if (va.epoch !== vb.epoch) return va.epoch > vb.epoch ? 1 : -1;
  const byVersion = compareSegments(va.version, vb.version);
  if (byVersion !== 0) return byVersion;
  return compareSegments(va.release, vb.release);
}

/** True when the two versions compare equal (the upgrade decision). */
export function rpmVersionEqual(a: string, b: string): boolean {
  return rpmVersionCompare(a, b) === 0;
}

// strconv.Atoi semantics: optional sign and decimal digits within int64, anything else is 0 here.
function parseGoInt(text: string): number {
  if (!GO_ATOI.test(text)) return 0;
  const value = BigInt(text);
  if (value > INT64_MAX || value < INT64_MIN) return 0;
  return Number(value);
}

function compareSegments(a: string, b: string): -1 | 0 | 1 {
  if (a === b) return 0;
  const segsA = a.match(SEGMENT) ?? [];
  const segsB = b.match(SEGMENT) ?? [];
  const common = Math.min(segsA.length, segsB.length);

  for (let i = 0; i < common; i++) {
    let sa = segsA[i] ?? '';
    let sb = segsB[i] ?? '';
    const tildeA = sa === '~';
    const tildeB = sb === '~';
    if (tildeA !== tildeB) return tildeA ? -1 : 1;

    const numericA = isDigit(sa);
    const numericB = isDigit(sb);
    if (numericA && !numericB) return 1;
    if (!numericA && numericB) return -1;
    if (numericA) {
      sa = sa.replace(/^0+/, '');
      sb = sb.replace(/^0+/, '');
      if (sa.length !== sb.length) return sa.length > sb.length ? 1 : -1;
    }
    if (sa !== sb) return sa < sb ? -1 : 1;
  }

  if (segsA.length === segsB.length) return 0;
  if (segsA.length > common && segsA[common] === '~') return -1;
  if (segsB.length > common && segsB[common] === '~') return 1;
  return segsA.length > segsB.length ? 1 : -1;
}

function isDigit(segment: string): boolean {
  const c = segment.charCodeAt(0);
  return c >= 0x30 && c <= 0x39;
}
