import { describe, expect, it } from 'vitest';
import { agentFilter, buildFilter, filterToJson, parseFilter } from '../../src/choria/protocol/filter.js';
import {
  broadcastSubject,
  callerIdHash,
  directedSubject,
  lifecycleSubject,
  replySubject,
  replyWildcard,
} from '../../src/choria/protocol/subjects.js';

describe('filters', () => {
  it('an agent filter carries all five arrays in Go key order', () => {
    expect(JSON.stringify(filterToJson(agentFilter('choria_provision')))).toBe(
      '{"fact":[],"cf_class":[],"agent":["choria_provision"],"identity":[],"compound":[]}',
    );
    expect(filterToJson(agentFilter('rpcutil', ['node1', '/^web/'])).identity).toEqual(['node1', '/^web/']);
  });

  it('builds complete filters from parts and round-trips fact and compound filters', () => {
    const f = buildFilter({
      fact: [{ fact: 'country', operator: '==', value: 'mt' }],
      compound: [[{ expr: "with('apache')" }]],
    });
    expect(f.cf_class).toEqual([]);
    const parsed = parseFilter(JSON.parse(JSON.stringify(filterToJson(f))), 'test');
    expect(parsed).toEqual(f);
  });

  it('parsing rejects missing required categories and unknown operators', () => {
    expect(() => parseFilter({ fact: [], cf_class: [], identity: [] }, 'req')).toThrow(
      'req: filter "compound" must be an array',
    );
    expect(() =>
      parseFilter(
        { fact: [{ fact: 'a', operator: '~~', value: 'b' }], cf_class: [], identity: [], compound: [] },
        'req',
      ),
    ).toThrow(/operator "~~"/);
    expect(() => parseFilter({ fact: [], cf_class: [1], identity: [], compound: [] }, 'req')).toThrow(/cf_class/);
  });
});

describe('subjects', () => {
  it('hashes the caller id with md5 for reply subjects', () => {
    expect(callerIdHash('choria=provisioner.example.net')).toBe('6079c8d10a2ceceb5904de01a22e9b41');
    expect(callerIdHash('choria=rip.mcollective')).toBe('37bdf08389145a56c13096c178802d3b');
    expect(callerIdHash('provisioner_signer')).toBe('22ec67b1822edddbee1f71725ee3827c');
  });

  it('builds request, reply and lifecycle subjects', () => {
    expect(replySubject('choria=provisioner.example.net', 'a2f0ca717c694f2086cfa81b6c494648')).toBe(
      'provisioning.reply.6079c8d10a2ceceb5904de01a22e9b41.a2f0ca717c694f2086cfa81b6c494648',
    );
    expect(replyWildcard('choria=provisioner.example.net')).toBe(
      'provisioning.reply.6079c8d10a2ceceb5904de01a22e9b41.>',
    );
    expect(broadcastSubject('discovery')).toBe('provisioning.broadcast.agent.discovery');
    expect(directedSubject('node1.example.net')).toBe('provisioning.node.node1.example.net');
    expect(lifecycleSubject('startup', 'provision_mode_server')).toBe(
      'choria.lifecycle.event.startup.provision_mode_server',
    );
    expect(lifecycleSubject('*', '*')).toBe('choria.lifecycle.event.*.*');
  });

  it('refuses values that would break the subject', () => {
    expect(() => directedSubject('node*')).toThrow(
      /no request is sent to the node identity "node\*": it holds U\+002A/,
    );
    expect(() => directedSubject('')).toThrow(/it is empty/);
    expect(() => directedSubject('a..b')).toThrow(/empty label/);
    expect(() => replySubject('c', 'id.with.dots')).toThrow(/request id/);
    expect(() => lifecycleSubject('startup', 'bad.component')).toThrow(/lifecycle component/);
    expect(() => broadcastSubject('a>')).toThrow(/agent/);
  });
});
