import { describe, expect, it } from 'vitest';
import {
  HistoryWriteRefusedError,
  NodeHistory,
  PROMPT_WRITE_MS,
  UNSTEADY_HOLD_MS,
  backoffAfter,
  decodeRecord,
  encodeRecord,
  historyKey,
  identityOfKey,
  siteFilter,
  MAX_ERROR_CHARS,
  type AttemptReport,
  type HistoryBacking,
  type NodeRecord,
} from '../../../src/provisioner/history/index.js';

const DAY = 86_400_000;

function history(
  opts: {
    backoffMs?: number;
    quarantineAfter?: number;
    capacity?: number;
    ttlMs?: number;
    maxWritesInFlight?: number;
  } = {},
): NodeHistory {
  return new NodeHistory({
    policy: {
      backoffMs: opts.backoffMs ?? 1000,
      backoffMaxMs: 10_000,
      quarantineAfter: opts.quarantineAfter ?? 0,
      random: () => 1 - 1e-12,
    },
    instance: 'prov1.example.net',
    ttlMs: opts.ttlMs ?? DAY,
    ...(opts.capacity !== undefined ? { capacity: opts.capacity } : {}),
    ...(opts.maxWritesInFlight !== undefined ? { maxWritesInFlight: opts.maxWritesInFlight } : {}),
  });
}

const failed = (at: number, message = 'boom'): AttemptReport => ({
  outcome: 'failed',
  message,
  at,
  durationMs: 12,
  configured: false,
  discoveredAt: at - 5,
});
const provisioned = (at: number): AttemptReport => ({
  outcome: 'provisioned',
  message: undefined,
  at,
  durationMs: 30,
  configured: true,
  discoveredAt: at - 5,
});

/** A backing whose writes are settled by the test. */
class ManualBacking implements HistoryBacking {
  readonly written: NodeRecord[] = [];
  readonly waiting: { record: NodeRecord; resolve: () => void; reject: (e: Error) => void }[] = [];
  #revision = 0;
  write(record: NodeRecord): Promise<number> {
    return new Promise((resolve, reject) => {
      const done = (): void => {
        this.written.push(record);
        resolve(++this.#revision);
      };
      this.waiting.push({ record, resolve: done, reject });
    });
  }
  settleAll(ok = true): void {
    for (const w of this.waiting.splice(0)) {
      if (ok) w.resolve();
      else w.reject(new Error('broker gone'));
    }
  }
}
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('back-off policy', () => {
  it('doubles the back-off from the base to the cap, jittered to 50-100 %', () => {
    const low = { backoffMs: 60_000, backoffMaxMs: 1_800_000, quarantineAfter: 0, random: () => 0 };
    const high = { ...low, random: () => 1 - 1e-12 };
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffAfter(n, high))).toEqual([
      60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000,
    ]);
    expect(backoffAfter(1, low)).toBe(30_000);
    expect(backoffAfter(40, high)).toBe(1_800_000); // no overflow
    expect(backoffAfter(3, { ...high, backoffMs: 0 })).toBe(0); // off, as upstream
  });
});

describe('NodeHistory', () => {
  it('holds a failing node back until its back-off ends, and a quarantined one until it is released', () => {
    const h = history({ quarantineAfter: 3 });
    h.attempted('n1', failed(0));
    expect(h.deferral('n1', 999)).toBe('backoff');
    expect(h.deferral('n1', 1000)).toBeUndefined();
    h.attempted('n1', failed(1000));
    expect(h.deferral('n1', 2999)).toBe('backoff');
    const q = h.attempted('n1', failed(3000, 'CSR refused'));
    expect(q).toMatchObject({
      failures: 3,
      attempts: 3,
      quarantinedAt: 3000,
      error: 'CSR refused',
      instance: 'prov1.example.net',
      firstSeen: -5,
    });
    expect(h.deferral('n1', 10_000_000)).toBe('quarantined');
    expect(h.quarantinedCount()).toBe(1);
    // a reboot without release-on-startup keeps the quarantine
    expect(h.release('n1', 4000, { keepQuarantine: true, rebooted: true })).toBe(false);
    expect(h.deferral('n1', 10_000_000)).toBe('quarantined');
    expect(h.release('n1', 5000)).toBe(true);
    expect(h.deferral('n1', 0)).toBeUndefined();
    expect(h.quarantinedCount()).toBe(0);
    expect(h.get('n1')).toMatchObject({ failures: 0, attempts: 3, outcome: 'failed' });
  });

  it('counts attempts across outcomes, resets failures on success and keeps a back-off through a non-failure', () => {
    const h = history();
    h.attempted('n1', failed(100));
    const gone = h.attempted('n1', {
      outcome: 'gone',
      message: 'no reply',
      at: 200,
      durationMs: 2000,
      configured: false,
      discoveredAt: 150,
    });
    expect(gone).toMatchObject({ attempts: 2, failures: 1, notBefore: 1100, firstSeen: 95 });
    const ok = h.attempted('n1', provisioned(5000));
    expect(ok).toMatchObject({
      attempts: 3,
      failures: 0,
      notBefore: undefined,
      provisionedAt: 5000,
      error: undefined,
      configuredAt: undefined,
    });
    // a failed attempt that configured the node remembers when (the next attempt's configuredAt)
    expect(h.attempted('n1', { ...failed(6000), configured: true }).configuredAt).toBe(6000);
    h.release('n1', 7000, { rebooted: true });
    expect(h.get('n1')?.configuredAt).toBeUndefined();
  });

  it('never quarantines with quarantine_after 0 and forgets the least recently changed beyond its capacity', () => {
    const h = history({ backoffMs: 0, capacity: 2 });
    for (let i = 0; i < 50; i++) h.attempted('n1', failed(i));
    expect(h.deferral('n1', 50)).toBeUndefined();
    expect(h.get('n1')?.failures).toBe(50);
    h.attempted('n2', failed(60));
    h.attempted('n3', failed(61));
    expect(h.get('n1')).toBeUndefined();
    expect(h.size).toBe(2);
  });

  it('beyond its capacity, forgets names that were never provisioned before a provisioned server', () => {
    const h = history({ backoffMs: 0, capacity: 3 });
    h.attempted('server-1', provisioned(1));
    h.attempted('server-2', provisioned(2));
    // names that answered once and went silent (a flood of forged servers, say)
    for (let i = 0; i < 100; i++) h.attempted(`forged-${i}`, failed(10 + i));
    expect(h.get('server-1')).toBeDefined();
    expect(h.get('server-2')).toBeDefined();
    expect(h.get('forged-99')).toBeDefined();
    expect(h.size).toBe(3);
  });

  it('forgets records unchanged for the TTL', () => {
    const h = history({ ttlMs: 1000 });
    h.attempted('old', failed(0));
    h.attempted('new', failed(900));
    expect(h.expire(1500)).toBe(1);
    expect([...h.records()].map((r) => r.identity)).toEqual(['new']);
  });

  it('keeps the shared version of the highest revision, so echoes and late arrivals change nothing', async () => {
    const h = history();
    const b = new ManualBacking();
    h.attach(b);
    const mine = h.attempted('n1', failed(1000));
    b.settleAll(); // stored at revision 1
    await tick();
    const theirs: NodeRecord = {
      ...mine,
      outcome: 'provisioned',
      instance: 'prov2',
      failures: 0,
      notBefore: undefined,
      updatedAt: 900,
    };
    // a newer revision wins whatever its clock says
    expect(h.merge(theirs, 2)).toBe(true);
    expect(h.get('n1')).toEqual(theirs);
    expect(h.deferral('n1', 1500)).toBeUndefined();
    // the same revision again, or an older one, changes nothing
    expect(h.merge({ ...theirs, outcome: 'deferred' }, 2)).toBe(false);
    expect(h.merge({ ...mine, updatedAt: 5000 }, 1)).toBe(false);
    expect(h.get('n1')?.outcome).toBe('provisioned');
    // a change here is later than what it replaces even when this clock is behind
    expect(h.attempted('n1', failed(800)).updatedAt).toBe(901);
    // a newer version arrives while the write of that change is under way: taken once it settles
    expect(h.merge({ ...theirs, quarantinedAt: 2500, updatedAt: 3000 }, 3)).toBe(true);
    b.settleAll(false); // that write failed (the broker went away)
    await tick();
    // the change made here and not yet written is applied again on the newer version
    expect(h.get('n1')).toMatchObject({ outcome: 'failed', quarantinedAt: 2500 });
    expect(h.quarantinedCount()).toBe(1);
  });

  it('writes each change through, one write a node at a time, and keeps failed writes for the next flush', async () => {
    const h = history();
    h.attempted('n1', failed(1)); // before a backing: pending
    expect(h.pendingWrites).toBe(1);
    const b = new ManualBacking();
    h.attach(b);
    expect(b.waiting.map((w) => w.record.attempts)).toEqual([1]);
    h.attempted('n1', failed(2)); // while the first write is in flight: written after it
    expect(b.waiting).toHaveLength(1);
    b.settleAll();
    await tick();
    expect(b.waiting.map((w) => w.record.attempts)).toEqual([2]);
    b.settleAll(false);
    await tick();
    expect(h.pendingWrites).toBe(1);
    h.flush();
    b.settleAll();
    await tick();
    expect(b.written.map((r) => r.attempts)).toEqual([1, 2]);
    expect(h.pendingWrites).toBe(0);
    // a release that changes nothing is not written
    h.release('n1', 10);
    h.release('n1', 11);
    expect(b.waiting).toHaveLength(1);
  });

  it('does not write again a record the broker refused for what it is, and goes on with the others', async () => {
    const refused: unknown[] = [];
    const h = new NodeHistory({
      policy: { backoffMs: 1000, backoffMaxMs: 10_000, quarantineAfter: 0 },
      instance: 'prov1.example.net',
      ttlMs: DAY,
      onWriteRefused: (err) => refused.push(err),
    });
    const b = new ManualBacking();
    h.attach(b);
    h.attempted('n1', failed(1));
    h.attempted('n2', failed(1));
    const n1 = b.waiting.find((w) => w.record.identity === 'n1');
    n1?.reject(new HistoryWriteRefusedError('the broker refuses the history record of "n1": invalid key'));
    b.waiting.splice(b.waiting.indexOf(n1 as (typeof b.waiting)[number]), 1);
    await tick();
    expect(refused).toHaveLength(1);
    h.flush();
    // only n2 was ever in flight again: n1 is not retried by the flush
    expect(b.waiting.map((w) => w.record.identity)).toEqual(['n2']);
    b.settleAll();
    await tick();
    expect(b.written.map((r) => r.identity)).toEqual(['n2']);
    expect(h.pendingWrites).toBe(0);
    h.flush();
    expect(b.waiting).toHaveLength(0);
    // the record stays in memory: this instance still knows the node's history
    expect(h.get('n1')?.attempts).toBe(1);
  });

  it('a refused write frees its slot: the change waiting behind it is written at once', async () => {
    const h = history({ maxWritesInFlight: 1 });
    const b = new ManualBacking();
    h.attach(b);
    h.attempted('n1', failed(1));
    h.attempted('n2', failed(1));
    expect(b.waiting.map((w) => w.record.identity)).toEqual(['n1']);
    b.waiting.splice(0, 1)[0]?.reject(new HistoryWriteRefusedError('refused'));
    await tick();
    expect(b.waiting.map((w) => w.record.identity)).toEqual(['n2']);
  });

  it('bounds the writes in flight, starting the next as one finishes', async () => {
    const h = history({ maxWritesInFlight: 2 });
    const b = new ManualBacking();
    h.attach(b);
    for (let i = 0; i < 5; i++) h.attempted(`n${i}`, failed(i));
    expect(b.waiting).toHaveLength(2);
    b.settleAll();
    await tick();
    expect(b.waiting).toHaveLength(2);
    b.settleAll();
    await tick();
    expect(b.waiting).toHaveLength(1);
    b.settleAll();
    await tick();
    expect(b.written.map((r) => r.identity).sort()).toEqual(['n0', 'n1', 'n2', 'n3', 'n4']);
    expect(h.pendingWrites).toBe(0);
  });
});

describe('history records and keys', () => {
  it('round-trips a record through its stored form and cuts long errors', () => {
    const h = history({ quarantineAfter: 1 });
    const r = h.attempted('web1.example.net', failed(Date.UTC(2026, 11, 2), 'x'.repeat(5000)));
    expect(r.error).toHaveLength(MAX_ERROR_CHARS);
    const stored = encodeRecord(r);
    expect(stored.byteLength).toBeLessThan(1024);
    expect(JSON.parse(new TextDecoder().decode(stored))).toMatchObject({
      format: 'choria-provisioner:node:1',
      quarantinedAt: '2026-12-02T00:00:00.000Z',
    });
    expect(decodeRecord(stored)).toEqual(r);
  });

  it('drops what an earlier version quoted of the output of a helper from a stored error', () => {
    const good = JSON.parse(new TextDecoder().decode(encodeRecord(history().attempted('n1', failed(5))))) as Record<
      string,
      unknown
    >;
    const older =
      'helper /h failed for n1: exited with status 1; stdout: "{\\"password\\":\\"hunter2\\"}"; stderr: "-----BEGIN PRIVATE KEY-----"';
    const r = decodeRecord(new TextEncoder().encode(JSON.stringify({ ...good, error: older })));
    expect(r.error).toBe('helper /h failed for n1: exited with status 1 (what the helper printed is not shown)');
    expect(
      decodeRecord(
        new TextEncoder().encode(JSON.stringify({ ...good, error: 'signed eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2ln' })),
      ).error,
    ).toBe('signed [redacted]');
  });

  it("drops the helper's defer or shutdown message an earlier version stored, and keeps this version's wording", () => {
    const good = JSON.parse(new TextDecoder().decode(encodeRecord(history().attempted('n1', failed(5))))) as Record<
      string,
      unknown
    >;
    const shown = (outcome: string, error: string): string | undefined =>
      decodeRecord(new TextEncoder().encode(JSON.stringify({ ...good, outcome, error }))).error;
    expect(shown('deferred', 'configuration defered: waiting for the CMDB, pass=abc')).toBe(
      'configuration defered by the helper (its message is not shown)',
    );
    expect(shown('shutdown', 'not in the CMDB')).toBe('shut down on request of the helper (its message is not shown)');
    const now = "configuration defered by the helper; its message is in the provisioner's log";
    expect(shown('deferred', now)).toBe(now);
    expect(shown('shutdown', 'shut down on request of the helper, without a message')).toBe(
      'shut down on request of the helper, without a message',
    );
    // other outcomes are the provisioner's own words, kept
    expect(shown('failed', 'not in the CMDB')).toBe('not in the CMDB');
  });

  it('refuses a stored value that is not a record, naming the problem', () => {
    const enc = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));
    const good = JSON.parse(new TextDecoder().decode(encodeRecord(history().attempted('n1', failed(5))))) as Record<
      string,
      unknown
    >;
    expect(() => decodeRecord(new TextEncoder().encode('{'))).toThrow(/not JSON/);
    expect(() => decodeRecord(enc([]))).toThrow(/not a JSON object/);
    expect(() => decodeRecord(enc({ ...good, format: 'x' }))).toThrow(/format "x"/);
    expect(() => decodeRecord(enc({ ...good, outcome: 'exploded' }))).toThrow(/outcome "exploded" is not one of/);
    expect(() => decodeRecord(enc({ ...good, attempts: -1 }))).toThrow(/attempts must be a whole number/);
    expect(() => decodeRecord(enc({ ...good, attemptAt: 'yesterday' }))).toThrow(/attemptAt "yesterday" is not a time/);
    expect(() => decodeRecord(enc({ ...good, identity: '' }))).toThrow(/identity must be a non-empty string/);
  });

  it('maps every site and identity to a key and back, encoding a site a key cannot hold; an identity that is not one has no key', () => {
    for (const [site, identity] of [
      ['dc1', 'web1.example.net'],
      ['', 'n1'],
      ['dc 1', 'web1.example.net'],
      ['dc.1', 'WEB_1'],
    ] as const) {
      const key = historyKey(site, identity) as string;
      expect(key).toMatch(/^[-\w=]+(?:\.[-\w=]+)+$/);
      expect(identityOfKey(site, key)).toBe(identity);
      expect(key.startsWith(siteFilter(site).slice(0, -1))).toBe(true);
    }
    expect(historyKey('dc1', 'web1.example.net')).toBe('dc1.web1.example.net');
    for (const identity of ['.odd..name.', 'ünïcode host', '=looks-encoded', 'x'.repeat(4100), 'a*b'])
      expect(historyKey('dc1', identity)).toBeUndefined();
    expect(identityOfKey('dc2', historyKey('dc1', 'n1') as string)).toBeUndefined();
    // an earlier version's encoded identity reads back to its text, for the identity rule to refuse
    expect(identityOfKey('dc1', `dc1.=${Buffer.from('odd name').toString('base64url')}`)).toBe('odd name');
  });
});

describe('NodeHistory: configure and restart recorded before they are sent', () => {
  it('sending(configure) resolves only once the shared copy took the record, and the next attempt starts with a restart', async () => {
    const h = history();
    const backing = new ManualBacking();
    h.attach(backing);
    let resolved = false;
    const written = h.sending('n1', 'configure', 1000, 2000).then((r) => {
      resolved = true;
      return r;
    });
    await tick();
    expect(resolved).toBe(false);
    backing.settleAll();
    expect(await written).toBe('written');
    expect(backing.written.at(-1)?.configuredAt).toBe(1000);
    // a record written before the first attempt ended has no outcome, and survives the round trip
    const stored = decodeRecord(encodeRecord(backing.written.at(-1) as NodeRecord));
    expect(stored.outcome).toBeUndefined();
    expect(stored.configuredAt).toBe(1000);
    // the attempt was cancelled after configure went out: the mark stays for the next owner
    h.attempted('n1', {
      outcome: 'cancelled',
      message: 'lease lapsed',
      at: 2000,
      durationMs: 5,
      configured: true,
      discoveredAt: 900,
    });
    expect(h.get('n1')?.configuredAt).toBe(1000);
    // success clears it
    h.attempted('n1', provisioned(3000));
    expect(h.get('n1')?.configuredAt).toBeUndefined();
  });

  it('a failed write does not hold the attempt', async () => {
    const h = history();
    const backing = new ManualBacking();
    h.attach(backing);
    const written = h.sending('n1', 'restart', 1000, 2000);
    backing.settleAll(false);
    await expect(written).resolves.toBe('write-failed');
    // and while writes fail, sends do not wait at all
    expect(h.sharedCopyIsPrompt()).toBe(false);
    await expect(h.sending('n2', 'configure', 1001, 2000)).resolves.toBe('not-waited');
    expect(h.get('n2')?.configuredAt).toBe(1001);
  });

  it('without a shared copy there is nothing to wait for', async () => {
    const h = history();
    await expect(h.sending('n1', 'configure', 1000, 2000)).resolves.toBe('not-waited');
    expect(h.get('n1')?.configuredAt).toBe(1000);
  });

  it('a wait that runs out, or a slow write, stops the waiting for UNSTEADY_HOLD_MS; a prompt shared copy is waited for again after it', async () => {
    let mono = 0;
    const h = new NodeHistory({
      policy: { backoffMs: 1000, backoffMaxMs: 10_000, quarantineAfter: 0 },
      instance: 'p',
      ttlMs: DAY,
      monotonic: () => mono,
    });
    const backing = new ManualBacking();
    h.attach(backing);
    expect(h.sharedCopyIsPrompt()).toBe(true);
    // the broker just came back: JetStream does not answer the write within the wait
    await expect(h.sending('n1', 'configure', 1000, 5)).resolves.toBe('late');
    expect(h.sharedCopyIsPrompt()).toBe(false);
    // the next node's send does not wait (its record is still written)
    await expect(h.sending('n2', 'configure', 1001, 5_000)).resolves.toBe('not-waited');
    expect(backing.waiting.map((w) => w.record.identity)).toContain('n2');
    // one write answering meanwhile does not make it prompt again before the hold is over
    mono = 500;
    backing.settleAll();
    await tick();
    expect(h.sharedCopyIsPrompt()).toBe(false);
    mono = UNSTEADY_HOLD_MS;
    expect(h.sharedCopyIsPrompt()).toBe(true);
    // a write acknowledged later than PROMPT_WRITE_MS starts the hold again
    const slow = h.sending('n3', 'restart', 1002, 60_000);
    mono += PROMPT_WRITE_MS + 1;
    backing.settleAll();
    await expect(slow).resolves.toBe('written');
    expect(h.sharedCopyIsPrompt()).toBe(false);
    mono += UNSTEADY_HOLD_MS;
    expect(h.sharedCopyIsPrompt()).toBe(true);
  });

  it('a node sent restart is held for the restart window, except when its startup event proves it started again', () => {
    const h = new NodeHistory({
      policy: { backoffMs: 1000, backoffMaxMs: 10_000, quarantineAfter: 0 },
      instance: 'p',
      ttlMs: DAY,
      restartWindowMs: 20_000,
    });
    void h.sending('n1', 'restart', 10_000, 2000);
    expect(h.deferral('n1', 10_500, 'discovery')).toBe('restarting');
    expect(h.deferral('n1', 29_999, 'discovery')).toBe('restarting');
    expect(h.deferral('n1', 29_999, 'event')).toBeUndefined();
    expect(h.deferral('n1', 30_000, 'discovery')).toBeUndefined();
    // a restart recorded by another instance comes in through merge() and holds the same way
    const other = new NodeHistory({
      policy: { backoffMs: 1000, backoffMaxMs: 10_000, quarantineAfter: 0 },
      instance: 'q',
      ttlMs: DAY,
    });
    other.merge(h.get('n1') as NodeRecord, 1);
    expect(other.deferral('n1', 11_000)).toBe('restarting');
  });
});
