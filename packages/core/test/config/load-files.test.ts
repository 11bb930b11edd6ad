import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadChoriaConfig } from '../../src/config/choria-config.js';
import { ConfigError } from '../../src/config/errors.js';
import { loadProvisionerConfig } from '../../src/config/provisioner-config.js';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'config-load-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function thrown(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadProvisionerConfig', () => {
  it('loads a file and records its path as source', () => {
    const file = join(dir, 'provisioner.yaml');
    writeFileSync(file, 'helper: /bin/h\ntoken: t\nworkers: 2\n');
    const config = loadProvisionerConfig(file);
    expect(config.source).toBe(file);
    expect(config.workers).toBe(2);
  });

  it('reports a missing file with its name and path', () => {
    const file = join(dir, 'absent.yaml');
    const err = thrown(() => loadProvisionerConfig(file));
    expect(err.file).toBe('absent.yaml');
    expect(err.reasons).toEqual([`absent.yaml: cannot read ${file}: file not found`]);
  });

  it('reports a directory given as the file', () => {
    const sub = join(dir, 'a-directory.yaml');
    mkdirSync(sub, { recursive: true });
    expect(thrown(() => loadProvisionerConfig(sub)).reasons).toEqual([
      `a-directory.yaml: cannot read ${sub}: is a directory, not a file`,
    ]);
  });

  it('reports problems in the file prefixed with its base name', () => {
    const file = join(dir, 'site-b.yaml');
    writeFileSync(file, 'helper: /bin/h\ntoken: t\ninterval: 30s\n');
    expect(thrown(() => loadProvisionerConfig(file)).reasons).toEqual([
      'site-b.yaml: interval "30s" is below the minimum of 1m',
    ]);
  });

  it('passes options through', () => {
    const file = join(dir, 'embedded.yaml');
    writeFileSync(file, 'token: t\nbogus: 1\n');
    const warnings: string[] = [];
    const config = loadProvisionerConfig(file, {
      requireHelper: false,
      cpuCount: 5,
      onWarning: (m) => warnings.push(m),
    });
    expect(config.workers).toBe(5);
    expect(warnings).toEqual(['embedded.yaml: unknown key "bogus" ignored']);
  });
});

describe('loadChoriaConfig from a file', () => {
  it('loads the given file', () => {
    const file = join(dir, 'choria.cfg');
    writeFileSync(
      file,
      'identity = prov.example.net\nplugin.security.provider = file\nplugin.choria.middleware_hosts = b1:4222\n',
    );
    const settings = loadChoriaConfig(file, { env: {} });
    expect(settings.source).toBe(file);
    expect(settings.identity).toBe('prov.example.net');
    expect(settings.middlewareHosts).toEqual(['nats://b1:4222']);
  });

  it('reports a missing given file', () => {
    const file = join(dir, 'client.cfg');
    expect(thrown(() => loadChoriaConfig(file)).reasons).toEqual([`client.cfg: cannot read ${file}: file not found`]);
  });

  it('reads the first existing file of the default lookup', () => {
    const home = join(dir, 'home');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, '.mcollective'), 'identity = from-home\n');
    const settings = loadChoriaConfig(undefined, { homeDir: home, env: {} });
    expect(settings.source).toBe(join(home, '.mcollective'));
    expect(settings.identity).toBe('from-home');

    writeFileSync(join(home, '.choriarc'), 'identity = from-choriarc\n');
    expect(loadChoriaConfig(undefined, { homeDir: home, env: {} }).identity).toBe('from-choriarc');
  });
});
