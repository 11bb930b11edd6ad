import { nodeIdentity as id } from '../../src/choria/identity.js';
import { describe, expect, it } from 'vitest';
import { ActiveList } from '../../src/provisioner/active-list.js';

const list = (): ActiveList => new ActiveList({ holdMs: 60_000, lockRetryMs: 120_000 });

describe('ActiveList', () => {
  it('does not add a known identity twice, whatever its state', () => {
    const l = list();
    const a = l.offer(id('n1'), 'discovery', 1000, 60_000);
    expect(a.result).toBe('added');
    expect(l.offer(id('n1'), 'event', 2000, 60_000).result).toBe('known');
    l.startAttempt(a.entry, 2000);
    expect(a.entry.state).toBe('provisioning');
    expect(l.offer(id('n1'), 'discovery', 200_000, 60_000).result).toBe('known');
    l.settle(a.entry, 'provisioned', 200_000, false);
    expect(a.entry.state).toBe('held');
    expect(l.offer(id('n1'), 'discovery', 200_000, 60_000).result).toBe('known');
    expect(l.size).toBe(1);
  });

  it('refreshes a still-queued entry older than one interval instead of re-queueing it (upstream intent)', () => {
    const l = list();
    const a = l.offer(id('n1'), 'discovery', 1000, 60_000);
    expect(l.offer(id('n1'), 'discovery', 1000 + 60_000, 60_000).result).toBe('known');
    const r = l.offer(id('n1'), 'discovery', 1000 + 60_001, 60_000);
    expect(r.result).toBe('refreshed');
    expect(r.entry).toBe(a.entry);
    expect(a.entry.discoveredAt).toBe(1000 + 60_001);
  });

  it('tells stale queue items from the live entry after a remove and re-add', () => {
    const l = list();
    const first = l.offer(id('n1'), 'discovery', 1, 60_000).entry;
    l.remove(first);
    const second = l.offer(id('n1'), 'discovery', 2, 60_000).entry;
    expect(l.isCurrent(first)).toBe(false);
    expect(l.isCurrent(second)).toBe(true);
    expect(second.generation).toBeGreaterThan(first.generation);
  });

  it('notes a startup event that came while the node was being provisioned, and only that', () => {
    const l = list();
    const e = l.offer(id('a'), 'discovery', 0, 1000).entry;
    l.offer(id('a'), 'event', 1, 1000);
    expect(e.startedDuringAttempt).toBe(false); // queued: the event found it waiting
    l.startAttempt(e, 2);
    l.offer(id('a'), 'discovery', 3, 1000);
    expect(e.startedDuringAttempt).toBe(false); // a discovery reply is no news of a restart
    l.offer(id('a'), 'event', 4, 1000, 0, '0.30.0');
    expect(e).toMatchObject({ startedDuringAttempt: true, reportedVersion: '0.30.0' });
    expect(l.settle(e, 'upgraded', 5, false)).toBe('removed');
    expect(l.offer(id('a'), 'event', 6, 1000).entry.startedDuringAttempt).toBe(false);
  });

  it("counts a new entry's attempts on from the node's past ones", () => {
    const l = list();
    expect(l.offer(id('c'), 'discovery', 9, 60_000, 3).entry.attempts).toBe(3);
    expect(l.offer(id('d'), 'discovery', 9, 60_000).entry.attempts).toBe(0);
  });

  it('clear() forgets every active entry and aborts the attempts in flight', () => {
    const l = list();
    const a = l.offer(id('a'), 'discovery', 1, 60_000).entry;
    l.offer(id('b'), 'event', 1, 60_000);
    const abort = l.startAttempt(a, 2);
    expect(l.clear(new Error('leadership was lost'))).toBe(2);
    expect(l.size).toBe(0);
    expect(abort?.signal.aborted).toBe(true);
  });

  it('starts no attempt on an entry that is no longer the live one', () => {
    const l = list();
    const first = l.offer(id('n1'), 'discovery', 1, 60_000).entry;
    l.remove(first);
    expect(l.startAttempt(first, 2)).toBeUndefined();
    expect(first.attempts).toBe(0);
  });

  it('counts each attempt and keeps the step it reports until the attempt ends', () => {
    const l = list();
    const e = l.offer(id('n1'), 'discovery', 1, 60_000, 2).entry;
    l.startAttempt(e, 5);
    l.noteStep(e, 'choria_provision#configure', 7);
    expect(e).toMatchObject({ state: 'provisioning', attempts: 3, step: 'choria_provision#configure', updatedAt: 7 });
    expect(l.settle(e, 'failed', 9, true)).toBe('removed');
    expect(e.step).toBeUndefined();
    expect(l.get('n1')).toBeUndefined();
  });

  it('settles an ended attempt by the outcome: a success that restarts or shuts the node holds it, the rest leave', () => {
    const l = list();
    const next = (
      outcome: 'provisioned' | 'shutdown' | 'upgraded' | 'failed' | 'skipped_locked',
      waitForLock: boolean,
    ): string | undefined => {
      const e = l.offer(id(`n-${outcome}-${waitForLock}`), 'discovery', 0, 60_000).entry;
      l.startAttempt(e, 0);
      return l.settle(e, outcome, 10, waitForLock);
    };
    expect(next('provisioned', false)).toBe('held');
    expect(next('shutdown', false)).toBe('held');
    expect(next('upgraded', false)).toBe('removed');
    expect(next('failed', true)).toBe('removed');
    expect(next('skipped_locked', false)).toBe('removed');
    expect(next('skipped_locked', true)).toBe('locked');
    expect(l.get('n-provisioned-false')?.waitEndsAt).toBe(10 + 60_000);
    expect(l.get('n-skipped_locked-true')?.waitEndsAt).toBe(10 + 120_000);
  });

  it('ends each wait at its own deadline, whatever order the waits began in', () => {
    const l = new ActiveList({ holdMs: 100, lockRetryMs: 30 });
    const held = l.offer(id('held'), 'discovery', 0, 60_000).entry;
    const locked = l.offer(id('locked'), 'discovery', 0, 60_000).entry;
    l.startAttempt(held, 0);
    l.startAttempt(locked, 0);
    l.settle(held, 'provisioned', 0, false); // until 100
    l.settle(locked, 'skipped_locked', 10, true); // until 40: later start, earlier end
    expect(l.takeDue(39)).toEqual({ released: 0, lockWaitsOver: [] });
    expect(l.takeDue(40)).toEqual({ released: 0, lockWaitsOver: [locked] });
    l.requeue(locked, 40);
    expect(locked).toMatchObject({ state: 'queued', waitEndsAt: undefined });
    expect(l.takeDue(100)).toEqual({ released: 1, lockWaitsOver: [] });
    expect(l.get('held')).toBeUndefined();
    expect(l.get('locked')).toBe(locked);
  });

  it('skips a wait that was superseded: the entry left, or waits again with a new deadline', () => {
    const l = new ActiveList({ holdMs: 100, lockRetryMs: 30 });
    const gone = l.offer(id('gone'), 'discovery', 0, 60_000).entry;
    l.startAttempt(gone, 0);
    l.settle(gone, 'provisioned', 0, false);
    l.remove(gone);
    const again = l.offer(id('gone'), 'discovery', 1, 60_000).entry;
    const twice = l.offer(id('twice'), 'discovery', 0, 60_000).entry;
    l.startAttempt(twice, 0);
    l.settle(twice, 'skipped_locked', 0, true); // until 30
    l.requeue(twice, 30);
    l.startAttempt(twice, 30);
    l.settle(twice, 'skipped_locked', 30, true); // until 60
    expect(l.takeDue(59)).toEqual({ released: 0, lockWaitsOver: [] });
    expect(l.takeDue(200)).toEqual({ released: 0, lockWaitsOver: [twice] });
    expect(l.get('gone')).toBe(again);
  });
});
