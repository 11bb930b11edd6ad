import { describe, expect, it } from 'vitest';
import { hostCheck, hostOfHeader } from '../../src/monitor/host-check.js';

describe('the Host check of the monitor port', () => {
  it('reads the host of a Host header', () => {
    expect(hostOfHeader('127.0.0.1:8080')).toBe('127.0.0.1');
    expect(hostOfHeader('LocalHost:80')).toBe('localhost');
    expect(hostOfHeader('[::1]:8080')).toBe('::1');
    expect(hostOfHeader('[::1]')).toBe('::1');
    expect(hostOfHeader('prov.example.net.')).toBe('prov.example.net');
    expect(hostOfHeader('prov.example.net:x')).toBeUndefined();
    expect(hostOfHeader('[::1')).toBeUndefined();
    expect(hostOfHeader('')).toBeUndefined();
  });

  it('serves IP literals, localhost and the bind address, refuses other names', () => {
    const known = hostCheck({ bindAddress: '0.0.0.0' });
    for (const h of ['127.0.0.1:9', 'localhost:9', 'localhost', '10.1.2.3', '[::1]:9', '[fe80::1]'])
      expect(known(h)).toBe(true);
    for (const h of ['evil.example:9', 'evil.example', 'localhost.evil.example', '127.0.0.1.evil.example', '', 'x:y'])
      expect(known(h)).toBe(false);
    expect(known(undefined)).toBe(false);
    expect(hostCheck({ bindAddress: 'prov.internal' })('PROV.internal:8080')).toBe(true);
  });

  it('serves the names the operator lists, in any case and with a final dot', () => {
    const known = hostCheck({ bindAddress: '0.0.0.0', allowed: ['prov1.example.net', 'Monitor.Example.NET.'] });
    expect(known('prov1.example.net:8080')).toBe(true);
    expect(known('monitor.example.net')).toBe(true);
    expect(known('prov2.example.net')).toBe(false);
  });
});
