import { afterEach, describe, expect, it, vi } from 'vitest';
import winston from 'winston';
import Transport from 'winston-transport';
import { LOG_BUDGET_PER_WINDOW, LogBudget } from '../../src/util/log-budget.js';

class Lines extends Transport {
  readonly lines: string[] = [];
  override log(info: { message: string }, next: () => void): void {
    this.lines.push(info.message);
    next();
  }
}

function budgeted(): { budget: LogBudget; lines: string[] } {
  const sink = new Lines();
  const logger = winston.createLogger({ transports: [sink] });
  return { budget: new LogBudget(logger, { windowMs: 10_000 }), lines: sink.lines };
}

afterEach(() => vi.useRealTimers());

describe('LogBudget', () => {
  it('writes a few warnings of a kind per window and sums up the rest at its end', () => {
    vi.useFakeTimers();
    const { budget, lines } = budgeted();
    for (let i = 0; i < 20_000; i++) budget.warn('refused-identity', `Refused flood-${i}`);
    expect(lines).toHaveLength(LOG_BUDGET_PER_WINDOW);
    vi.advanceTimersByTime(10_000);
    expect(lines).toHaveLength(LOG_BUDGET_PER_WINDOW + 1);
    expect(lines.at(-1)).toBe(
      `${20_000 - LOG_BUDGET_PER_WINDOW} more refused identities in the last 10 s (not each written)`,
    );
    // a new window: written again
    budget.warn('refused-identity', 'Refused again');
    expect(lines.at(-1)).toBe('Refused again');
  });

  it('counts kinds apart, whatever the texts', () => {
    vi.useFakeTimers();
    const { budget, lines } = budgeted();
    for (let i = 0; i < 100; i++) {
      budget.warn('stray-reply', `stray ${i}`);
      budget.warn('unexpected-reply', `unexpected ${i}`);
    }
    expect(lines.filter((l) => l.startsWith('stray'))).toHaveLength(LOG_BUDGET_PER_WINDOW);
    expect(lines.filter((l) => l.startsWith('unexpected'))).toHaveLength(LOG_BUDGET_PER_WINDOW);
    budget.flush();
    expect(lines.filter((l) => l.includes('more'))).toHaveLength(2);
  });

  it('writes no sum when nothing was left out, and allows() answers for a caller with its own logger', () => {
    vi.useFakeTimers();
    const { budget, lines } = budgeted();
    const allowed = Array.from({ length: 8 }, () => budget.allows('node-failure'));
    expect(allowed.filter(Boolean)).toHaveLength(LOG_BUDGET_PER_WINDOW);
    vi.advanceTimersByTime(10_000);
    expect(lines).toEqual(['3 more node failures in the last 10 s (not each written)']);
    budget.warn('undecodable-reply', 'once');
    vi.advanceTimersByTime(10_000);
    expect(lines.at(-1)).toBe('once');
  });
});
