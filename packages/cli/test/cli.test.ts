import { mkdtempSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { asDefaultCommand, main } from '../src/cli.js';
import { capture } from './capture-io.js';
import { formatStatus } from '../src/commands/status.js';

let dir: string;
let helper: string;
let choriaCfg: string;

function writeConfig(name: string, text: string): string {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cpts-cli-'));
  helper = join(dir, 'helper.sh');
  writeFileSync(helper, '#!/bin/sh\necho "{}"\n');
  chmodSync(helper, 0o755);
  choriaCfg = join(dir, 'choria.cfg');
  writeFileSync(
    choriaCfg,
    'identity = prov.example.net\nplugin.choria.middleware_hosts = nats://127.0.0.1:4222\nplugin.security.provider = file\n',
  );
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('choria-provisioner --help / --version', () => {
  it('prints usage with every command and exits 0', async () => {
    const logs: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void logs.push(a.join(' ')));
    const io = capture();
    expect(await main(['--help'], io)).toBe(0);
    const text = logs.join('\n');
    for (const c of ['run', 'validate', 'status', 'demo', '--config', '--choria-config', '--pid', '--debug'])
      expect(text).toContain(c);
  });

  it('prints the version', async () => {
    const logs: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void logs.push(a.join(' ')));
    expect(await main(['--version'], capture())).toBe(0);
    expect(logs.join('')).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('exits 2 on usage errors', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const io = capture();
    expect(await main(['validate'], io)).toBe(2);
    expect(io.stderr).toContain('Missing required argument: config');
    const io2 = capture();
    expect(await main(['bogus-command', '--config', 'x'], io2)).toBe(2);
  });
});

describe('choria-provisioner validate', () => {
  const good = (extra = ''): string => `helper: HELPER\ntoken: t\nsite: s1\ninterval: 5m\n${extra}`;

  it('prints what it found and exits 0 for a good config', async () => {
    const f = writeConfig('p.yaml', good().replace('HELPER', helper));
    const io = capture();
    expect(await main(['validate', '--config', f, '--choria-config', choriaCfg], io)).toBe(0);
    expect(io.stdout).toContain(`${f}: OK`);
    expect(io.stdout).toContain('interval:           300s');
    expect(io.stdout).toContain('brokers:            nats://127.0.0.1:4222');
    expect(io.stdout).toContain('protocol v1');
    expect(io.stdout).toContain(
      'node history:       bucket CHORIA_PROVISIONER_HISTORY (168 h, memory when unreachable)',
    );
    const mem = writeConfig('m.yaml', good('history_store: memory\n').replace('HELPER', helper));
    const io2 = capture();
    expect(await main(['validate', '--config', mem, '--choria-config', choriaCfg], io2)).toBe(0);
    expect(io2.stdout).toContain('node history:       this process only (history_store: memory)');
  });

  it('uses the choria_config key of the file before --choria-config', async () => {
    const f = writeConfig('p.yaml', good(`choria_config: ${choriaCfg}\n`).replace('HELPER', helper));
    const io = capture();
    expect(await main(['validate', '--config', f, '--choria-config', join(dir, 'missing.cfg')], io)).toBe(0);
    expect(io.stdout).toContain(`choria config:      ${choriaCfg}`);
  });

  const cases: [string, string, string][] = [
    ['missing file', '', 'does-not-exist.yaml'],
    ['YAML syntax error', 'workers: [1, 2\n', 'line'],
    ['wrong type', 'workers: "4"\nhelper: HELPER\n', 'workers'],
    ['too-small interval', 'interval: 30s\nhelper: HELPER\n', 'interval "30s" is below the minimum of 1m'],
    ['forbidden component characters', 'lifecycle_component: a.b\nhelper: HELPER\n', 'lifecycle_component'],
    [
      'pki+ed25519',
      'helper: HELPER\njwt_verify_cert: x\njwt_signing_key: y\nfeatures:\n  pki: true\n  ed25519: true\n',
      'can only enable one of pki or ed25519 features',
    ],
    ['removed leader_election_name', 'helper: HELPER\nleader_election_name: prov\n', 'leader_election_name'],
  ];
  for (const [name, text, expected] of cases) {
    it(`exits 1 and names the problem: ${name}`, async () => {
      const f =
        name === 'missing file'
          ? join(dir, 'does-not-exist.yaml')
          : writeConfig('p.yaml', text.replace('HELPER', helper));
      const io = capture();
      expect(await main(['validate', '--config', f, '--choria-config', choriaCfg], io)).toBe(1);
      expect(io.stderr).toContain('INVALID');
      expect(io.stderr).toContain(expected);
    });
  }

  it('warns about an unknown key but still validates', async () => {
    const f = writeConfig('p.yaml', good('wokers: 3\n').replace('HELPER', helper));
    const io = capture();
    expect(await main(['validate', '--config', f, '--choria-config', choriaCfg], io)).toBe(0);
    expect(io.stdout).toContain('wokers');
  });

  it('exits 1 when the helper is not executable', async () => {
    const f = writeConfig('p.yaml', good().replace('HELPER', join(dir, 'nope.sh')));
    const io = capture();
    expect(await main(['validate', '--config', f, '--choria-config', choriaCfg], io)).toBe(1);
    expect(io.stderr).toContain('does not exist or is not an executable file');
  });
});

describe('choria-provisioner run', () => {
  it('exits 1 without starting anything when a config is invalid', async () => {
    const f = writeConfig('p.yaml', 'interval: 10s\n');
    const io = capture();
    expect(await main(['run', '--config', f, '--choria-config', choriaCfg], io)).toBe(1);
    expect(io.stderr).toContain('could not load');
  });

  it('refuses two configs with the same site', async () => {
    const a = writeConfig('a.yaml', `helper: ${helper}\ntoken: t\nsite: same\n`);
    const b = writeConfig('b.yaml', `helper: ${helper}\ntoken: t\nsite: same\n`);
    const io = capture();
    expect(await main(['run', '--config', a, '--config', b, '--choria-config', choriaCfg], io)).toBe(1);
    expect(io.stderr).toContain('both use site "same"');
  });

  it("is parsed as the default command when named (no help text rendered), but run --help is run's help", async () => {
    expect(asDefaultCommand(['run', '--config', 'a.yaml'])).toEqual(['--config', 'a.yaml']);
    expect(asDefaultCommand(['validate', '--config', 'a.yaml'])).toEqual(['validate', '--config', 'a.yaml']);
    expect(asDefaultCommand(['--config', 'run'])).toEqual(['--config', 'run']);
    for (const flag of ['--help', '-h', '--version']) expect(asDefaultCommand(['run', flag])).toEqual(['run', flag]);
    const logs: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void logs.push(a.join(' ')));
    expect(await main(['run', '--help'], capture())).toBe(0);
    const text = logs.join('\n');
    for (const option of ['--dry-run', '--monitor-address', '--pid']) expect(text).toContain(option);
    // named or not, an unknown option is the same usage error
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const named = capture();
    const unnamed = capture();
    expect(await main(['run', '--config', 'a.yaml', '--no-such-option'], named)).toBe(2);
    expect(await main(['--config', 'a.yaml', '--no-such-option'], unnamed)).toBe(2);
    expect(named.stderr).toBe(unnamed.stderr);
  });
});

describe('choria-provisioner status', () => {
  /** a running site with nothing queued, as /status gives it */
  const LON = { site: 'lon', paused: false, queue: 0, busyWorkers: 0, workers: 4, hosts: [] };

  it('says when a site lists its nodes only to its token, and counts them', () => {
    const site = { ...LON, hostCounts: { failed: 2, held: 3 }, hostsNeedToken: true };
    expect(formatStatus({ sites: [site] })).toBe(
      'site lon: running, queue 0, busy workers 0/4, hosts 5\nnodes not listed: the site lists them only with its monitor_api_token (--token-file FILE or CHORIA_PROVISIONER_API_TOKEN)\n',
    );
  });

  it('shows the renewals: the counts, why they stopped, the nodes listed', () => {
    const site = {
      ...LON,
      renewals: {
        stopped: '1 renewals failed in a row, the last: refused reprovision: not authorized',
        counts: { scheduled: 1, due: 0, 'in-flight': 1, failed: 1, 'not-renewable': 1 },
        next: [
          {
            identity: 'n1',
            state: 'scheduled',
            expiresAt: '2027-01-01T00:00:00.000Z',
            dueAt: '2026-12-30T00:00:00.000Z',
          },
        ],
        inFlight: [
          {
            identity: 'n2',
            state: 'in-flight',
            expiresAt: '2027-01-01T00:00:00.000Z',
            sentAt: '2026-12-07T00:00:00.000Z',
            sentBy: 'p1',
          },
        ],
        failed: [
          { identity: 'n3', state: 'failed', expiresAt: '2027-01-01T00:00:00.000Z', reason: 'refused reprovision: x' },
        ],
        notRenewable: [
          { identity: 'n4', state: 'not-renewable', expiresAt: '2027-01-01T00:00:00.000Z', reason: 'no --default' },
        ],
      },
    };
    const text = formatStatus({ sites: [site] });
    expect(text).toContain(
      'renewals: 1 scheduled, 0 due, 1 in flight, 1 failed, 1 not renewable; ' +
        'STOPPED until resumed (choria-provisioner renewals resume): 1 renewals failed in a row',
    );
    const rows = text
      .split('\n')
      .filter((l) => /^n\d /.test(l))
      .map((l) => l.split(/\s{2,}/));
    expect(rows).toEqual([
      ['n3', 'failed', '2027-01-01T00:00:00.000Z', 'refused reprovision: x'],
      ['n2', 'in-flight', '2026-12-07T00:00:00.000Z', '2027-01-01T00:00:00.000Z', 'sent by p1'],
      ['n1', 'scheduled', '2026-12-30T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
      ['n4', 'not-renewable', '2027-01-01T00:00:00.000Z', 'no --default'],
    ]);
  });

  it('exits 3 with a clear message when the endpoint is unreachable', async () => {
    const io = capture();
    expect(await main(['status', '--url', 'http://127.0.0.1:1'], io)).toBe(3);
    expect(io.stderr).toContain('could not fetch http://127.0.0.1:1/status');
  });
});
