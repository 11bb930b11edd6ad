// What the tests of shared records have in common: a report of a provisioning that gave a node
// credentials, and one shared copy in memory with compare-and-set, as the history bucket is.
import {
  RevisionConflictError,
  type AttemptReport,
  type HistoryBacking,
  type NodeHistory,
  type NodeRecord,
} from '../../../src/provisioner/history/index.js';
import type { RoundBacking } from '../../../src/provisioner/renewal/round.js';
import type { IssuedCredentials } from '../../../src/host/credentials.js';

/** A success at `at` that gave the node credentials expiring at `expiresAt` (renewable), or `credentials`. */
export function provisionedReport(at: number, expiresAt: number | IssuedCredentials): AttemptReport {
  return {
    outcome: 'provisioned',
    message: undefined,
    at,
    durationMs: 1,
    configured: true,
    discoveredAt: at,
    credentials: typeof expiresAt === 'number' ? { expiresAt, renewability: { renewable: true } } : expiresAt,
  };
}

/** One shared copy: node records and the renewal round, each key with its revision. */
export class SharedKv {
  readonly nodes = new Map<string, { record: NodeRecord; revision: number }>();
  round: { value: Uint8Array; revision: number } | undefined;
  #revision = 0;
  /** the histories that follow it: each write is delivered to them, as the bucket's watch does */
  readonly followers: NodeHistory[] = [];
  /** while true, the followers hear no writes (a lagging view) */
  deaf = false;

  backing(): HistoryBacking {
    return {
      write: (record, revision) => {
        const now = this.nodes.get(record.identity);
        if ((now?.revision ?? 0) !== revision)
          return Promise.reject(
            new RevisionConflictError('conflict', { value: now?.record, revision: now?.revision ?? 0 }),
          );
        const rev = ++this.#revision;
        this.nodes.set(record.identity, { record, revision: rev });
        if (!this.deaf) for (const f of this.followers) f.merge(record, rev);
        return Promise.resolve(rev);
      },
    };
  }

  roundBacking(): RoundBacking {
    return {
      read: () => Promise.resolve(this.round ?? { value: undefined, revision: 0 }),
      write: (value, revision) => {
        if ((this.round?.revision ?? 0) !== revision)
          return Promise.reject(new RevisionConflictError('conflict', this.round ?? { value: undefined, revision: 0 }));
        this.round = { value, revision: ++this.#revision };
        return Promise.resolve(this.round.revision);
      },
    };
  }

  /** `history` follows this copy from now on (it is given every record stored so far) and writes to it. */
  follow(history: NodeHistory): void {
    this.followers.push(history);
    for (const { record, revision } of this.nodes.values()) history.merge(record, revision);
    history.attach(this.backing());
  }

  get(identity: string): NodeRecord | undefined {
    return this.nodes.get(identity)?.record;
  }
}
