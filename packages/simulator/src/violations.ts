// Protocol violations: every request a real server would reject (no reply or an error status) is
// recorded with a kind, so tests and benchmarks can assert that a provisioner behaved.

export const VIOLATION_KINDS = [
  'schema',
  'protocol-version',
  'collective',
  'ttl-expired',
  'bad-token',
  'lock-held',
  'bad-input',
  'empty-config',
  'config-not-strings',
  'key-not-encrypted',
  'key-decrypt-failed',
  'server-jwt-invalid',
  'key-mismatch',
  'configure-after-restart',
  'configured-twice',
  'discovery-payload',
  'unknown-action',
  'after-shutdown',
  'after-restart',
  'restart-refused',
  'update-while-updating',
  'reply-subject',
  'refused',
  // sent choria_provision#reprovision although it cannot come back into provisioning mode
  'stranded',
] as const;

export type ViolationKind = (typeof VIOLATION_KINDS)[number];

export interface Violation {
  kind: ViolationKind;
  detail: string;
  /** ISO 8601 time */
  at: string;
}

/** Violations of one node (or of the fleet); keeps exact counts and the first `limit` entries. */
export class ViolationLog {
  readonly entries: Violation[] = [];
  readonly counts = new Map<ViolationKind, number>();
  total = 0;

  constructor(private readonly limit: number) {}

  record(kind: ViolationKind, detail: string, nowMs: number): Violation {
    const v: Violation = { kind, detail, at: new Date(nowMs).toISOString() };
    this.total++;
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
    if (this.entries.length < this.limit) this.entries.push(v);
    return v;
  }

  count(kind?: ViolationKind): number {
    return kind === undefined ? this.total : (this.counts.get(kind) ?? 0);
  }
}
