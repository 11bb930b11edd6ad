import { describe, expect, it } from 'vitest';
import { DEFAULT_CERT_DENY_LIST } from '../../../src/config/schema.js';
import { compileDenyList, matchesDenyList, parseCsr, validateCsr } from '../../../src/host/security/csr.js';
import { readVector, readVectorJson } from '@choria-provisioner/test-support/vectors';

interface CsrCase {
  file: string;
  identity: string;
  cert_deny_list: string[];
  parsed_common_name: string;
  parsed_dns_names: string[];
  valid: boolean;
  error?: string;
}
interface DenyCase {
  patterns: string[];
  name: string;
  denied: boolean;
}

const csrCases = readVectorJson<{ cases: CsrCase[] }>('crypto', 'csr-validation.json').cases;
const denyVectors = readVectorJson<{ default_cert_deny_list: string[]; cases: DenyCase[] }>('crypto', 'denylist.json');

describe('validateCsr (csr-validation.json)', () => {
  it('has the 13 cases', () => {
    expect(csrCases).toHaveLength(13);
  });

  it.each(csrCases)('$file as $identity with $cert_deny_list', (c) => {
    const pem = readVector('crypto', 'csr', c.file);
    expect(parseCsr(pem)).toEqual({ commonName: c.parsed_common_name, dnsNames: c.parsed_dns_names });
    if (c.valid) {
      expect(validateCsr(pem, c.identity, c.cert_deny_list)).toEqual({
        commonName: c.parsed_common_name,
        dnsNames: c.parsed_dns_names,
      });
    } else {
      expect(() => validateCsr(pem, c.identity, c.cert_deny_list)).toThrow(c.error ?? 'an error');
    }
  });

  it('accepts a precompiled deny list', () => {
    const pem = readVector('crypto', 'csr', 'csr-denied-san.pem');
    expect(() => validateCsr(pem, 'ginkgo.example.net', compileDenyList(DEFAULT_CERT_DENY_LIST))).toThrow(
      'bob.privileged.mcollective matches denied certificate pattern',
    );
  });

  it('uses the default deny list for an empty list', () => {
    const pem = readVector('crypto', 'csr', 'csr-denied-cn.pem');
    expect(() => validateCsr(pem, 'bob.choria', [])).toThrow('bob.choria matches denied certificate pattern');
  });

  it('ignores the PEM label, text around the block, and does not check the signature', () => {
    const pem = readVector('crypto', 'csr', 'csr-valid.pem');
    const relabelled = `junk before\n${pem.replaceAll('CERTIFICATE REQUEST', 'WHATEVER')}junk after`;
    expect(validateCsr(relabelled, 'ginkgo.example.net', DEFAULT_CERT_DENY_LIST).commonName).toBe('ginkgo.example.net');
  });

  it('fails cleanly on missing and unparsable input', () => {
    expect(() => validateCsr('', 'x', [])).toThrow('no CSR received');
    expect(() => validateCsr('not pem at all', 'x', [])).toThrow(/^could not parse CSR: /);
    expect(() =>
      validateCsr('-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n', 'x', []),
    ).toThrow(/^could not parse CSR: /);
  });
});

describe('deny list (denylist.json)', () => {
  it('has the upstream default list', () => {
    expect([...DEFAULT_CERT_DENY_LIST]).toEqual(denyVectors.default_cert_deny_list);
  });

  it.each(denyVectors.cases)('$patterns vs $name -> denied $denied', (c) => {
    expect(matchesDenyList(c.name, compileDenyList(c.patterns))).toBe(c.denied);
  });

  it('skips patterns that do not compile', () => {
    expect(compileDenyList(['[', '(?=a)a', 'a{1001}', '\\.choria$']).patterns).toHaveLength(1);
  });
});
