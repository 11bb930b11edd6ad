// CSR checks for `features.pki`: common name = identity, no name on the deny list.
import { createRequire } from 'node:module';
import type * as X509 from '@peculiar/x509';
import { RE2JS } from 're2js';
import { errorText } from '../../util/values.js';
import { decodeFirstPemBlock } from './pem.js';

// The upstream default `cert_deny_list` (used when the setting is absent or an empty list) is the
// configuration's: one list, one owner.
import { DEFAULT_CERT_DENY_LIST } from '../../config/schema.js';

/** Compiled deny-list patterns (the uncompilable ones already dropped). */
export interface DenyList {
  readonly patterns: readonly RE2JS[];
}

export interface CsrNames {
  commonName: string;
  dnsNames: string[];
}

/**
 * @peculiar/x509 (with tsyringe and reflect-metadata) is a large share of the CLI's start-up, and
 * only `features.pki` needs it: it is loaded at the first CSR. Through require, so
 * validateCsr stays synchronous (the package ships CommonJS beside its ES module).
 */
const requireLazily = createRequire(import.meta.url);
let x509: typeof X509 | undefined;
function x509Library(): typeof X509 {
  if (x509 === undefined) {
    requireLazily('reflect-metadata');
    x509 = requireLazily('@peculiar/x509') as typeof X509;
  }
  return x509;
}

const COMMON_NAME_OID = '2.5.4.3';
const SUBJECT_ALT_NAME_OID = '2.5.29.17';
// Go's `^/.+/$`: at least one character between the slashes and no newline anywhere.
const SLASH_DELIMITED = /^\/[^\n]+\/$/;

/**
 * Compiles `cert_deny_list` entries as Go RE2 expressions (JavaScript RegExp has a different
 * dialect; re2js is a port of RE2). `/re/` delimiters are stripped; patterns that do not compile
 * are skipped silently, as upstream does.
 */
export function compileDenyList(patterns: readonly string[]): DenyList {
  const compiled: RE2JS[] = [];
  for (const pattern of patterns) {
    const source = SLASH_DELIMITED.test(pattern) ? pattern.replace(/^\/+/, '').replace(/\/+$/, '') : pattern;
    try {
      compiled.push(RE2JS.compile(source));
    } catch {
      // upstream ignores patterns that do not compile
    }
  }
  return { patterns: compiled };
}

/** True when any pattern matches anywhere in `name`. */
export function matchesDenyList(name: string, denyList: DenyList): boolean {
  return denyList.patterns.some((pattern) => pattern.matcher(name).find());
}

/** The last subject CN and the DNS SANs of a PEM CSR (any block label; the signature is not checked, as upstream). */
export function parseCsr(csrPem: string): CsrNames {
  const block = decodeFirstPemBlock(csrPem);
  if (block === null) throw new Error('could not parse CSR: no PEM data found');
  const { Pkcs10CertificateRequest, SubjectAlternativeNameExtension } = x509Library();
  let csr: X509.Pkcs10CertificateRequest;
  try {
    csr = new Pkcs10CertificateRequest(block.bytes);
  } catch (err) {
    throw new Error(`could not parse CSR: ${errorText(err)}`, { cause: err });
  }

  const commonNames = csr.subjectName.getField(COMMON_NAME_OID);
  // With several SAN extensions Go keeps the last one.
  const sanExtensions = csr.getExtensions(SUBJECT_ALT_NAME_OID);
  const san = sanExtensions[sanExtensions.length - 1];
  const dnsNames =
    san instanceof SubjectAlternativeNameExtension
      ? san.names.items.filter((item) => item.type === 'dns').map((item) => item.value)
      : [];
  return { commonName: commonNames[commonNames.length - 1] ?? '', dnsNames };
}

/**
 * Validates a node's CSR: its common name must equal `identity` and neither the CN nor any DNS SAN
 * may match the deny list. Returns the names; throws with upstream's texts otherwise.
 */
export function validateCsr(csrPem: string, identity: string, denyList: readonly string[] | DenyList): CsrNames {
  if (csrPem === '') throw new Error('no CSR received');
  const names = parseCsr(csrPem);
  if (names.commonName !== identity) {
    throw new Error(`common name ${names.commonName} does not match identity ${identity}`);
  }
  const compiled = isCompiled(denyList)
    ? denyList
    : compileDenyList(denyList.length === 0 ? DEFAULT_CERT_DENY_LIST : denyList);
  for (const name of [names.commonName, ...names.dnsNames]) {
    if (matchesDenyList(name, compiled)) throw new Error(`${name} matches denied certificate pattern`);
  }
  return names;
}

function isCompiled(denyList: readonly string[] | DenyList): denyList is DenyList {
  return !Array.isArray(denyList);
}
