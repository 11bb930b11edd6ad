// The watchdog ends a process whose event loop stands still, with a message naming what it was
// doing, and takes its child processes with it; a process that keeps turning is left alone.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isAlive } from '@choria-provisioner/test-support/processes';
import { until } from '@choria-provisioner/test-support/wait';
import { parseSimulatorArgs } from '../src/cli-args.js';
import { startWatchdog } from '../src/watchdog.js';

const STUCK = fileURLToPath(new URL('./fixtures/stuck-event-loop.mjs', import.meta.url));

describe('watchdog', () => {
  it('ends a stuck process and its children with a message instead of hanging', async () => {
    const started = Date.now();
    const r = spawnSync(process.execPath, [STUCK, '1500'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.signal).toBe('SIGKILL');
    // well before the 30 s the test would wait: the watchdog, not the timeout, ended it
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.stderr).toMatch(
      /^stuck-fixture: watchdog: the event loop has not turned for \d+\.\d s \(limit 1\.5 s\), while waiting on a lock that never opens; stopping pid \d+ and its 1 child processes instead of hanging\./,
    );
    const child = (JSON.parse(r.stdout.split('\n')[0] ?? '{}') as { child: number }).child;
    // SIGKILLed with its group; on a loaded machine it may take a moment to be reaped
    await until(`child ${child} gone`, () => !isAlive(child), 5_000);
  });

  it('leaves a turning event loop alone, and stops with it', () => {
    const r = spawnSync(process.execPath, [STUCK, '500', 'turning'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
  });

  it('refuses a limit that is not positive', () => {
    expect(() => startWatchdog({ name: 'x', limitMs: 0 })).toThrow('watchdog limit must be positive, got 0 ms');
  });

  it('is on by default in the simulator command, --watchdog 0 turns it off', () => {
    expect(parseSimulatorArgs(['--server', 'nats://127.0.0.1:1']).watchdogS).toBe(30);
    expect(parseSimulatorArgs(['--server', 'nats://127.0.0.1:1', '--watchdog', '0']).watchdogS).toBe(0);
    expect(() => parseSimulatorArgs(['--server', 'nats://127.0.0.1:1', '--watchdog', '-1'])).toThrow(
      /--watchdog must be 0/,
    );
  });
});
