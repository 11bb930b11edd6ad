import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger, winstonLevel } from '../../src/util/logger.js';
import { PauseFlag } from '../../src/util/pause.js';
import { CancelledError, pausedError } from '../../src/util/cancelled.js';

describe('createLogger', () => {
  it('maps Choria levels to winston levels, --debug wins, default info', () => {
    expect(winstonLevel(undefined)).toBe('info');
    expect(winstonLevel('fatal')).toBe('error');
    expect(winstonLevel('warn')).toBe('warn');
    expect(winstonLevel('warn', true)).toBe('debug');
  });

  it('writes JSON lines with site and host fields to a file and redacts secrets', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cpts-log-')), 'p.log');
    const log = createLogger({ logfile: file, loglevel: 'debug', site: 'lon' });
    log
      .child({ host: 'web1.example.net' })
      .info('Provisioning web1.example.net', { token: 's3cret', data: { password: 'p', keep: 1 } });
    log.debug('debug line');
    log.warn(
      'quoted: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKEYMATERIAL\n-----END EC PRIVATE KEY----- and eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl',
    );
    await new Promise<void>((resolve) => {
      log.on('finish', () => resolve());
      log.end();
    });
    await new Promise((r) => setTimeout(r, 50));
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({
      level: 'info',
      message: 'Provisioning web1.example.net',
      site: 'lon',
      host: 'web1.example.net',
      token: '[redacted]',
      data: { password: '[redacted]', keep: 1 },
    });
    expect(readFileSync(file, 'utf8')).not.toContain('s3cret');
    expect(lines[1]).toMatchObject({ level: 'debug', message: 'debug line' });
    // whatever a message quotes: no PEM block and no JWT reaches the file
    expect(lines[2]).toMatchObject({ level: 'warn', message: 'quoted: [redacted] and [redacted]' });
    expect(readFileSync(file, 'utf8')).not.toContain('KEYMATERIAL');
  });
});

describe('PauseFlag', () => {
  it('pauses, resumes, flips and notifies listeners only on change', () => {
    const p = new PauseFlag();
    const seen: boolean[] = [];
    const off = p.onChange((v) => seen.push(v));
    p.resume();
    p.pause();
    p.pause();
    expect(p.paused).toBe(true);
    expect(p.flip()).toBe(false);
    off();
    p.pause();
    expect(seen).toEqual([true, false]);
    const paused = pausedError('rpcutil#inventory');
    expect(paused).toBeInstanceOf(CancelledError);
    expect(paused).toMatchObject({
      name: 'CancelledError',
      reason: 'pause',
      message: 'provisioning is paused, cannot perform rpcutil#inventory',
    });
  });
});
