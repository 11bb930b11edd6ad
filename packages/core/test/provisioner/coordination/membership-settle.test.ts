// When a newly formed member settles (acts on ownership), with a connection whose deliveries the
// test controls and fake timers: it settles only after the messages that had arrived by its
// settle time have been read. On a busy process the settle timer can run before the event loop
// reads the connection, where a member's answer may already be waiting.
import type { NatsConnection } from 'nats';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { encodeHeartbeat } from '../../../src/provisioner/coordination/messages.js';
import { Membership, SETTLE_MS } from '../../../src/provisioner/coordination/membership.js';
import { silentLogger } from '../../../src/util/logger.js';

type Callback = (err: Error | null, msg: { data: Uint8Array }) => void;

/** Just what Membership uses of a NATS connection; messages arrive when the test delivers them. */
class ScriptedConnection {
  readonly subs = new Map<string, Callback>();
  readonly published: { subject: string; data: Uint8Array }[] = [];
  subscribe(subject: string, opts: { callback: Callback }): { unsubscribe(): void } {
    this.subs.set(subject, opts.callback);
    return { unsubscribe: () => this.subs.delete(subject) };
  }
  publish(subject: string, data: string | Uint8Array): void {
    this.published.push({ subject, data: typeof data === 'string' ? new TextEncoder().encode(data) : data });
  }
  flush(): Promise<void> {
    return Promise.resolve();
  }
  deliver(subject: string, data: Uint8Array): void {
    this.subs.get(subject)?.(null, { data });
  }
}

describe('active/active membership: settling', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads what arrived by its settle time before it settles', async () => {
    const nc = new ScriptedConnection();
    let membersWhenSettled: number | undefined;
    const m = new Membership({
      nc: nc as unknown as NatsConnection,
      group: 'lon',
      instance: 'a.example.net',
      heartbeatMs: 2_000,
      logger: silentLogger(),
      version: 'test',
      report: () => ({ owned: 0, provisioned: 0, queued: 0 }),
      onChange: () => {
        if (m.ready) membersWhenSettled ??= m.members().length;
      },
      onDone: () => undefined,
    });
    m.start();
    const own = nc.published[0]!;
    // its own heartbeat comes back: formed, settling in SETTLE_MS
    nc.deliver(own.subject, own.data);
    expect(m.state).toBe('formed');
    // a member's answer that the connection holds when the settle timer runs
    const peer = encodeHeartbeat({ instance: 'b.example.net', incarnation: 'b0b0', intervalMs: 2_000, leaving: false, owned: 0, provisioned: 0, queued: 0, version: 'test' });
    setTimeout(() => nc.deliver(own.subject, new TextEncoder().encode(peer)), SETTLE_MS);
    await vi.advanceTimersByTimeAsync(SETTLE_MS + 10);
    expect(m.ready).toBe(true);
    expect(membersWhenSettled).toBe(2);
    await m.stop();
  });
});
