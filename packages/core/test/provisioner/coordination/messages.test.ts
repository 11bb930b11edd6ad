import { nodeIdentity as id } from '../../../src/choria/identity.js';
import { describe, expect, it } from 'vitest';
import {
  CoordinationMessageError,
  coordinationSubjects,
  encodeAsk,
  encodeBusy,
  encodeDone,
  encodeGrant,
  encodeHeartbeat,
  parseDone,
  parseHeartbeat,
  parseWorkMessage,
  type Heartbeat,
} from '../../../src/provisioner/coordination/messages.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const hb: Heartbeat = {
  instance: 'prov-a.example.net',
  incarnation: '0011aabb',
  intervalMs: 2000,
  leaving: false,
  owned: 12,
  provisioned: 40,
  queued: 9,
  version: '1.2.3',
};

describe('active/active messages', () => {
  it('round-trips a heartbeat and a done notice', () => {
    expect(parseHeartbeat(bytes(encodeHeartbeat(hb)))).toEqual(hb);
    // numbered: a sender knows its own echo by it; a heartbeat without one (an older sender) parses
    expect(parseHeartbeat(bytes(encodeHeartbeat({ ...hb, seq: 41 }))).seq).toBe(41);
    expect(parseHeartbeat(bytes(encodeHeartbeat(hb))).seq).toBeUndefined();
    expect(parseDone(bytes(encodeDone({ instance: 'prov-a.example.net', nodes: [id('n1'), id('n2')] })))).toEqual({
      instance: 'prov-a.example.net',
      nodes: ['n1', 'n2'],
    });
    // with the sender's process id: two processes of one identity tell their notices apart
    expect(
      parseDone(bytes(encodeDone({ instance: 'prov-a.example.net', incarnation: '0011aabb', nodes: [id('n1')] }))),
    ).toEqual({ instance: 'prov-a.example.net', incarnation: '0011aabb', nodes: ['n1'] });
  });

  it('uses subjects in the provisioning account that nodes may not publish to', () => {
    const s = coordinationSubjects('lon');
    expect({ members: s.members, done: s.done, work: s.work('0011aabb') }).toEqual({
      members: 'provisioning.coordination.lon.members',
      done: 'provisioning.coordination.lon.done',
      work: 'provisioning.coordination.lon.work.0011aabb',
    });
    // what go-choria lets a provisioning-mode server publish
    for (const allowed of ['choria.lifecycle.', 'provisioning.reply.', 'provisioning.registration.']) {
      for (const subject of [s.members, s.done, s.work('0011aabb')]) expect(subject.startsWith(allowed)).toBe(false);
    }
  });

  it('reads a heartbeat without "queued" (a sender that predates the hand-over) as nothing queued', () => {
    const { queued: _queued, ...old } = JSON.parse(encodeHeartbeat(hb)) as Record<string, unknown>;
    expect(parseHeartbeat(bytes(JSON.stringify(old)))).toEqual({ ...hb, queued: 0 });
  });

  it('round-trips asks, grants and busy notices on one work subject, told apart by protocol', () => {
    expect(
      parseWorkMessage(
        bytes(
          encodeBusy({
            instance: 'prov-c.example.net',
            incarnation: 'c0c0',
            nodes: [id('n3.example.net'), id('n4.example.net')],
          }),
        ),
      ),
    ).toEqual({
      busy: { instance: 'prov-c.example.net', incarnation: 'c0c0', nodes: ['n3.example.net', 'n4.example.net'] },
    });
    expect(
      parseWorkMessage(bytes(encodeAsk({ instance: 'prov-b.example.net', incarnation: 'ff00', want: 8 }))),
    ).toEqual({ ask: { instance: 'prov-b.example.net', incarnation: 'ff00', want: 8 } });
    const nodes = [{ identity: id('n1.example.net'), reportedVersion: '0.30.2' }, { identity: id('n2.example.net') }];
    expect(
      parseWorkMessage(bytes(encodeGrant({ instance: 'prov-a.example.net', incarnation: '0011aabb', nodes }))),
    ).toEqual({
      grant: { instance: 'prov-a.example.net', incarnation: '0011aabb', nodes },
    });
    // an empty grant: nothing to spare
    expect(parseWorkMessage(bytes(encodeGrant({ instance: 'a', incarnation: 'b', nodes: [] })))).toEqual({
      grant: { instance: 'a', incarnation: 'b', nodes: [] },
    });
  });

  it('rejects garbage on the work subject with the reason', () => {
    const ask = JSON.parse(encodeAsk({ instance: 'a', incarnation: 'b', want: 2 })) as Record<string, unknown>;
    const grant = JSON.parse(
      encodeGrant({ instance: 'a', incarnation: 'b', nodes: [{ identity: id('n1') }] }),
    ) as Record<string, unknown>;
    const busy = JSON.parse(encodeBusy({ instance: 'a', incarnation: 'b', nodes: [id('n1')] })) as Record<
      string,
      unknown
    >;
    const bad: [unknown, RegExp][] = [
      [
        { ...ask, protocol: 'choria-provisioner:done:1' },
        /none of choria-provisioner:ask:1, choria-provisioner:grant:1, choria-provisioner:busy:1/,
      ],
      [{ ...busy, nodes: [{ identity: 'n1' }] }, /nodes\[0\] must be a node identity \(a string\)/],
      [{ ...busy, nodes: ['n1', 'evil\u001b[2J'] }, /nodes\[1\] is not a node identity: it holds U\+001B/],
      [{ ...busy, instance: 7 }, /"instance" must be a non-empty string/],
      [{ ...ask, want: 0 }, /"want" must be an integer >= 1/],
      [{ ...ask, incarnation: '' }, /"incarnation" must be a non-empty string/],
      // it becomes a subject token of the member's work subject: nothing a broker would refuse or read as a wildcard
      [{ ...ask, incarnation: 'x'.repeat(4100) }, /"incarnation" must be 1 to 64 letters, digits/],
      [{ ...ask, incarnation: '>' }, /"incarnation" must be 1 to 64/],
      [{ ...grant, incarnation: 'a.b' }, /"incarnation" must be 1 to 64/],
      [{ ...busy, instance: 'evil\u001b[2J' }, /"instance" is not an identity: it holds U\+001B/],
      [{ ...grant, nodes: 'n1' }, /"nodes" must be an array/],
      [{ ...grant, nodes: ['n1'] }, /nodes\[0\] must be an object/],
      [{ ...grant, nodes: [{ identity: '' }] }, /nodes\[0\].identity is not a node identity: it is empty/],
      [{ ...grant, nodes: [{ identity: 'a.*' }] }, /nodes\[0\].identity is not a node identity/],
      [{ ...grant, nodes: [{ identity: 'n1', version: 3 }] }, /nodes\[0\].version must be a string/],
    ];
    for (const [obj, reason] of bad)
      expect(() => parseWorkMessage(bytes(JSON.stringify(obj))), JSON.stringify(obj)).toThrow(reason);
    expect(() => parseWorkMessage(bytes('{'))).toThrow(CoordinationMessageError);
  });

  it('rejects garbage with the reason', () => {
    const bad: [string, RegExp][] = [
      ['not json', /not JSON/],
      ['[1]', /not a JSON object/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), protocol: 'x' }), /protocol "x"/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), instance: '' }), /"instance" must be a non-empty string/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), interval_ms: 0 }), /"interval_ms" must be an integer >= 1/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), seq: 0 }), /"seq" must be an integer >= 1/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), owned: -1 }), /"owned" must be an integer >= 0/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), leaving: 'no' }), /"leaving" must be a boolean/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), queued: 1.5 }), /"queued" must be an integer >= 0/],
    ];
    for (const [text, reason] of bad) {
      expect(() => parseHeartbeat(bytes(text)), text).toThrow(CoordinationMessageError);
      expect(() => parseHeartbeat(bytes(text)), text).toThrow(reason);
    }
    expect(() =>
      parseDone(bytes(JSON.stringify({ protocol: 'choria-provisioner:done:1', instance: 'a', nodes: ['ok', 3] }))),
    ).toThrow(/nodes\[1\] must be a node identity/);
  });
});
