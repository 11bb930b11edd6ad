import { describe, expect, it } from 'vitest';
import { QueueClosedError, QueueFullError, WorkQueue } from '../../src/provisioner/work-queue.js';

describe('WorkQueue', () => {
  it('is FIFO across wrap-around', async () => {
    const q = new WorkQueue<number>(3);
    q.push(1);
    q.push(2);
    expect(await q.pop()).toBe(1);
    q.push(3);
    q.push(4);
    expect(q.length).toBe(3);
    expect([await q.pop(), await q.pop(), await q.pop()]).toEqual([2, 3, 4]);
    expect(q.length).toBe(0);
  });

  it('takes what was pushed to the front first, the newest of those first, across wrap-around', async () => {
    const q = new WorkQueue<string>(4);
    q.push('a');
    q.push('b');
    expect(await q.pop()).toBe('a');
    q.pushFront('x');
    q.pushFront('y');
    q.push('c');
    expect(q.length).toBe(4);
    expect(() => q.pushFront('z')).toThrow(QueueFullError);
    expect([await q.pop(), await q.pop(), await q.pop(), await q.pop()]).toEqual(['y', 'x', 'b', 'c']);
    const waiting = q.pop();
    q.pushFront('w');
    expect(await waiting).toBe('w');
  });

  it('refuses pushes beyond capacity with the counts', () => {
    const q = new WorkQueue<string>(2);
    q.push('a');
    q.push('b');
    expect(() => q.push('c')).toThrow(QueueFullError);
    expect(() => q.push('c')).toThrow('work queue is full with 2 / 2 entries');
  });

  it('hands items straight to waiting consumers and wakes them on close', async () => {
    const q = new WorkQueue<string>(1);
    const waiting = q.pop();
    q.push('x');
    expect(await waiting).toBe('x');
    expect(q.length).toBe(0);
    const w2 = q.pop();
    q.close();
    await expect(w2).rejects.toBeInstanceOf(QueueClosedError);
    expect(() => q.push('y')).toThrow(QueueClosedError);
  });

  it('clear drops queued items', async () => {
    const q = new WorkQueue<number>(5);
    q.push(1);
    q.push(2);
    expect(q.clear()).toBe(2);
    q.push(3);
    expect(await q.pop()).toBe(3);
  });

  it('next() gives the items like pop() and undefined once the queue is closed', async () => {
    const q = new WorkQueue<number>(2);
    q.push(7);
    expect(await q.next()).toBe(7);
    const waiting = q.next();
    q.close();
    expect(await waiting).toBeUndefined();
    expect(await q.next()).toBeUndefined();
  });
});
