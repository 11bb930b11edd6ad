import { describe, expect, it } from 'vitest';
import {
  applyChoriaInsecure,
  applyProvisionerOverrides,
  checkChoriaSettings,
  choriaConfigFile,
  defaultChoriaConfigCandidates,
  loadChoriaConfig,
  parseChoriaConfig,
  parseKeyValueLines,
  type ChoriaParseOptions,
} from '../../src/config/choria-config.js';
import { ConfigError } from '../../src/config/errors.js';
import { parseProvisionerConfig } from '../../src/config/provisioner-config.js';
import type { ChoriaSettings } from '../../src/config/types.js';

const OPTS: ChoriaParseOptions = { hostname: 'host.example.net', homeDir: '/home/prov', isRoot: true, env: {} };

function parse(text: string, opts: ChoriaParseOptions = {}): ChoriaSettings {
  return parseChoriaConfig(text, '/etc/choria-provisioner/choria.cfg', { ...OPTS, ...opts });
}

function thrown(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

function provisioner(yaml: string) {
  return parseProvisionerConfig(`helper: /bin/h\ntoken: t\n${yaml}`, 'provisioner.yaml', { cpuCount: 1 });
}

describe('key = value parsing', () => {
  it('skips comments and blank lines, trims keys and values, later keys win', () => {
    const raw = parseKeyValueLines(
      [
        '# a comment',
        '; another comment',
        '   # indented comment',
        '',
        '   ',
        '  identity   =   one.example.net  ',
        'collectives=a,b',
        'identity = two.example.net',
        'plugin.custom.thing = x = y',
        'not a pair',
        'empty.value =',
        '= no key',
      ].join('\r\n'),
    );
    expect(raw).toEqual({
      identity: 'two.example.net',
      collectives: 'a,b',
      'plugin.custom.thing': 'x = y',
    });
  });

  it('keeps an earlier value when a later line has no value (as Choria does)', () => {
    expect(parseKeyValueLines('ttl = 30\nttl =\n')).toEqual({ ttl: '30' });
  });

  it('keeps unknown keys in raw without complaint', () => {
    const settings = parse('plugin.choria.stats_port = 8222\nrpcauthorization = 1\nidentity = x\n');
    expect(settings.raw).toEqual({ 'plugin.choria.stats_port': '8222', rpcauthorization: '1', identity: 'x' });
    expect(Object.isFrozen(settings.raw)).toBe(true);
  });
});

describe('defaults', () => {
  it('applies the defaults of an empty file', () => {
    const settings = parse('');
    expect(settings).toEqual({
      source: '/etc/choria-provisioner/choria.cfg',
      identity: 'host.example.net',
      middlewareHosts: [],
      collectives: ['mcollective'],
      mainCollective: 'mcollective',
      securityProvider: 'puppet',
      protocolSecure: true,
      tls: true,
      certificateFile: '/etc/puppetlabs/puppet/ssl/certs/host.example.net.pem',
      keyFile: '/etc/puppetlabs/puppet/ssl/private_keys/host.example.net.pem',
      caFile: '/etc/puppetlabs/puppet/ssl/certs/ca.pem',
      tokenFile: undefined,
      seedFile: undefined,
      certname: 'host.example.net',
      natsUser: undefined,
      natsPassword: undefined,
      ttl: 60,
      discoveryTimeout: 2,
      loglevel: undefined,
      logfile: undefined,
      raw: {},
    });
    expect(Object.isFrozen(settings)).toBe(true);
  });

  it('uses os.hostname() for identity by default', () => {
    const settings = parseChoriaConfig('', 'c.cfg', { env: {}, isRoot: true });
    expect(settings.identity.length).toBeGreaterThan(0);
  });
});

describe('settings read', () => {
  it('reads identity, brokers, collectives and timing', () => {
    const settings = parse(
      [
        'identity = provisioner.mcollective',
        'plugin.choria.middleware_hosts = nats://b1.example.net:4222, b2.example.net:4222 ,tls://b3:4222,,',
        'collectives = mcollective, other',
        'main_collective = other',
        'ttl = 120',
        'discovery_timeout = 5',
        'loglevel = debug',
        'logfile = ~/choria.log',
        'plugin.nats.user = alice',
        'plugin.nats.pass = pw',
      ].join('\n'),
    );
    expect(settings.identity).toBe('provisioner.mcollective');
    expect(settings.middlewareHosts).toEqual([
      'nats://b1.example.net:4222',
      'nats://b2.example.net:4222',
      'tls://b3:4222',
    ]);
    expect(settings.collectives).toEqual(['mcollective', 'other']);
    expect(settings.mainCollective).toBe('other');
    expect(settings.ttl).toBe(120);
    expect(settings.discoveryTimeout).toBe(5);
    expect(settings.loglevel).toBe('debug');
    expect(settings.logfile).toBe('/home/prov/choria.log');
    expect(settings.natsUser).toBe('alice');
    expect(settings.natsPassword).toBe('pw');
  });

  it('uses the first collective as main collective', () => {
    expect(parse('collectives = one,two\n').mainCollective).toBe('one');
  });

  it('ignores an unknown loglevel (the provisioner overrides it anyway)', () => {
    expect(parse('loglevel = chatty\n').loglevel).toBeUndefined();
  });

  it('rejects bad numbers and unsupported providers, all at once', () => {
    const err = thrown(() => parse('ttl = soon\ndiscovery_timeout = 0\nplugin.security.provider = pkcs11\n'));
    expect(err.file).toBe('choria.cfg');
    expect(err.reasons).toEqual([
      'choria.cfg: plugin.security.provider "pkcs11" is not supported; use file, puppet, choria',
      'choria.cfg: ttl "soon" must be a whole number of seconds greater than 0',
      'choria.cfg: discovery_timeout "0" must be a whole number of seconds greater than 0',
    ]);
  });
});

describe('security providers', () => {
  it('file: reads certificate, key and ca', () => {
    const settings = parse(
      [
        'identity = provisioner.mcollective',
        'plugin.security.provider = file',
        'plugin.security.file.certificate = /etc/choria-provisioner/ssl/cert.pem',
        'plugin.security.file.key = ~/ssl/key.pem',
        'plugin.security.file.ca = /etc/choria-provisioner/ssl/ca.pem',
      ].join('\n'),
    );
    expect(settings.securityProvider).toBe('file');
    expect(settings.certificateFile).toBe('/etc/choria-provisioner/ssl/cert.pem');
    expect(settings.keyFile).toBe('/home/prov/ssl/key.pem');
    expect(settings.caFile).toBe('/etc/choria-provisioner/ssl/ca.pem');
    expect(settings.certname).toBe('provisioner.mcollective');
  });

  it('puppet: derives the paths from ssldir and certname', () => {
    const settings = parse(
      'identity = node1.example.net\nplugin.security.provider = puppet\nplugin.choria.ssldir = /srv/ssl\n',
    );
    expect(settings.certificateFile).toBe('/srv/ssl/certs/node1.example.net.pem');
    expect(settings.keyFile).toBe('/srv/ssl/private_keys/node1.example.net.pem');
    expect(settings.caFile).toBe('/srv/ssl/certs/ca.pem');
  });

  it('puppet: honours the certname override, then MCOLLECTIVE_CERTNAME', () => {
    const base = 'identity = node1\nplugin.choria.ssldir = /srv/ssl\n';
    const overridden = parse(`${base}plugin.security.certname_override = prov.mcollective\n`, {
      env: { MCOLLECTIVE_CERTNAME: 'env.mcollective' },
    });
    expect(overridden.certname).toBe('prov.mcollective');
    expect(overridden.certificateFile).toBe('/srv/ssl/certs/prov.mcollective.pem');

    const fromEnv = parse(base, { env: { MCOLLECTIVE_CERTNAME: 'env.mcollective' } });
    expect(fromEnv.certname).toBe('env.mcollective');
    expect(fromEnv.keyFile).toBe('/srv/ssl/private_keys/env.mcollective.pem');
  });

  it('puppet: defaults the ssldir like Puppet for root and other users', () => {
    expect(parse('identity = n\n', { isRoot: true }).caFile).toBe('/etc/puppetlabs/puppet/ssl/certs/ca.pem');
    expect(parse('identity = n\n', { isRoot: false }).caFile).toBe(
      '/home/prov/.puppetlabs/etc/puppet/ssl/certs/ca.pem',
    );
  });

  it('choria: reads token and seed files and optional TLS files', () => {
    const settings = parse(
      [
        'identity = provisioner_signer',
        'plugin.security.provider = choria',
        'plugin.security.choria.token_file = /etc/choria-provisioner/credentials/signer.jwt',
        'plugin.security.choria.seed_file = /etc/choria-provisioner/credentials/signer.seed',
        'plugin.security.choria.ca = /etc/choria-provisioner/ca.pem',
      ].join('\n'),
    );
    expect(settings.securityProvider).toBe('choria');
    expect(settings.tokenFile).toBe('/etc/choria-provisioner/credentials/signer.jwt');
    expect(settings.seedFile).toBe('/etc/choria-provisioner/credentials/signer.seed');
    expect(settings.caFile).toBe('/etc/choria-provisioner/ca.pem');
    expect(settings.certificateFile).toBeUndefined();
    expect(settings.keyFile).toBeUndefined();
  });
});

describe('default file lookup', () => {
  it('lists the Choria client locations in order', () => {
    expect(defaultChoriaConfigCandidates('/home/u')).toEqual([
      '/home/u/.choriarc',
      '/home/u/.mcollective',
      '/etc/choria/client.conf',
      '/usr/local/etc/choria/client.conf',
      '/etc/puppetlabs/mcollective/client.cfg',
    ]);
    expect(defaultChoriaConfigCandidates('')).toHaveLength(3);
  });

  it('reports every place looked when none exists', () => {
    const asked: string[] = [];
    const err = thrown(() =>
      loadChoriaConfig(undefined, {
        homeDir: '/home/u',
        exists: (p) => {
          asked.push(p);
          return false;
        },
      }),
    );
    expect(asked).toEqual(defaultChoriaConfigCandidates('/home/u'));
    expect(err.reasons).toEqual([
      'Choria client configuration: none found; looked for /home/u/.choriarc, /home/u/.mcollective, /etc/choria/client.conf, /usr/local/etc/choria/client.conf, /etc/puppetlabs/mcollective/client.cfg; give one with --choria-config or the choria_config key',
    ]);
  });

  it('stops at the first candidate that exists', () => {
    const asked: string[] = [];
    const err = thrown(() =>
      loadChoriaConfig(undefined, {
        homeDir: '/nonexistent-home-for-test',
        exists: (p) => {
          asked.push(p);
          return p.endsWith('/.mcollective');
        },
      }),
    );
    // the chosen candidate does not really exist, so reading it fails naming it
    expect(asked).toEqual(['/nonexistent-home-for-test/.choriarc', '/nonexistent-home-for-test/.mcollective']);
    expect(err.reasons).toEqual(['.mcollective: cannot read /nonexistent-home-for-test/.mcollective: file not found']);
  });
});

describe('provisioner overrides', () => {
  const x509 = (): ChoriaSettings =>
    parse(
      [
        'identity = provisioner.mcollective',
        'collectives = mcollective',
        'loglevel = warn',
        'plugin.choria.middleware_hosts = broker:4222',
        'plugin.security.provider = file',
        'plugin.security.file.certificate = /c.pem',
        'plugin.security.file.key = /k.pem',
        'plugin.security.file.ca = /ca.pem',
        'plugin.nats.user = someone',
        'plugin.nats.pass = pw',
      ].join('\n'),
    );

  it('forces the provisioning collective and the provisioner log settings', () => {
    const out = applyProvisionerOverrides(x509(), provisioner('loglevel: debug\nlogfile: /var/log/p.log\n'));
    expect(out.collectives).toEqual(['provisioning']);
    expect(out.mainCollective).toBe('provisioning');
    expect(out.loglevel).toBe('debug');
    expect(out.logfile).toBe('/var/log/p.log');
    expect(out.tls).toBe(true);
    expect(out.protocolSecure).toBe(true);
    expect(out.securityProvider).toBe('file');
    expect(out.natsUser).toBe('someone');
    expect(Object.isFrozen(out)).toBe(true);
    expect(Object.isFrozen(out.collectives)).toBe(true);
  });

  it('logs to stdout when the provisioner config has no logfile, whatever the Choria file says', () => {
    const settings = parse('logfile = /var/log/choria.log\n');
    expect(applyProvisionerOverrides(settings, provisioner('')).logfile).toBeUndefined();
  });

  it('choria_insecure turns off TLS and protocol security and forces the file provider', () => {
    const issuer = parse(
      'plugin.security.provider = choria\nplugin.security.choria.token_file = /t\nplugin.security.choria.seed_file = /s\n',
    );
    const out = applyProvisionerOverrides(issuer, provisioner('choria_insecure: true\n'));
    expect(out.tls).toBe(false);
    expect(out.protocolSecure).toBe(false);
    expect(out.securityProvider).toBe('file');
  });

  it('choria_insecure alone (the renewal client) keeps the collectives, identity and log settings', () => {
    const out = applyChoriaInsecure(x509(), true);
    expect([out.tls, out.protocolSecure, out.securityProvider]).toEqual([false, false, 'file']);
    expect([out.collectives, out.identity, out.loglevel]).toEqual([['mcollective'], 'provisioner.mcollective', 'warn']);
    expect(applyChoriaInsecure(x509(), false).tls).toBe(true);
  });

  it('broker_provisioning_password logs in as the provisioner user', () => {
    const out = applyProvisionerOverrides(x509(), provisioner('broker_provisioning_password: provS3cret\n'));
    expect(out.natsUser).toBe('provisioner');
    expect(out.natsPassword).toBe('provS3cret');
  });

  it('does not change the input', () => {
    const settings = x509();
    applyProvisionerOverrides(settings, provisioner('choria_insecure: true\n'));
    expect(settings.collectives).toEqual(['mcollective']);
    expect(settings.tls).toBe(true);
  });
});

describe('choria config file choice', () => {
  it('the choria_config key wins over the --choria-config flag', () => {
    expect(choriaConfigFile(provisioner('choria_config: /site/a.cfg\n'), '/flag.cfg')).toBe('/site/a.cfg');
    expect(choriaConfigFile(provisioner(''), '/flag.cfg')).toBe('/flag.cfg');
    expect(choriaConfigFile(provisioner(''), undefined)).toBeUndefined();
    expect(choriaConfigFile(provisioner(''), '')).toBeUndefined();
  });
});

describe('checkChoriaSettings', () => {
  it('accepts complete x509 and issuer settings', () => {
    const x509 = parse(
      'plugin.choria.middleware_hosts = b:4222\nplugin.security.provider = file\nplugin.security.file.certificate = /c\nplugin.security.file.key = /k\nplugin.security.file.ca = /ca\n',
    );
    expect(checkChoriaSettings(x509)).toEqual([]);
    const issuer = parse(
      'plugin.choria.middleware_hosts = b:4222\nplugin.security.provider = choria\nplugin.security.choria.token_file = /t\nplugin.security.choria.seed_file = /s\n',
    );
    expect(checkChoriaSettings(issuer)).toEqual([]);
    expect(checkChoriaSettings(parse('plugin.choria.middleware_hosts = b:4222\n'))).toEqual([]);
  });

  it('names what is missing', () => {
    expect(checkChoriaSettings(parse('plugin.security.provider = file\nplugin.security.file.ca = /ca\n'))).toEqual([
      'choria.cfg: plugin.choria.middleware_hosts is not set; give the broker address(es), e.g. nats://broker.example.net:4222 (DNS SRV lookup is not supported)',
      'choria.cfg: the file security provider needs a certificate (plugin.security.file.certificate)',
      'choria.cfg: the file security provider needs a key (plugin.security.file.key)',
    ]);
    expect(
      checkChoriaSettings(parse('plugin.choria.middleware_hosts = b\nplugin.security.provider = choria\n')),
    ).toEqual([
      'choria.cfg: the choria security provider needs plugin.security.choria.token_file',
      'choria.cfg: the choria security provider needs plugin.security.choria.seed_file',
    ]);
  });

  it('needs no x509 files in insecure mode', () => {
    const insecure = applyProvisionerOverrides(
      parse('plugin.choria.middleware_hosts = b\nplugin.security.provider = file\n'),
      provisioner('choria_insecure: true\n'),
    );
    expect(checkChoriaSettings(insecure)).toEqual([]);
  });
});
