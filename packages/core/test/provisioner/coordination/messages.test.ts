import { describe, expect, it } from 'vitest';
import {
  CoordinationMessageError,
  coordinationSubjects,
  encodeDone,
  encodeHeartbeat,
  parseDone,
  parseHeartbeat,
  type Heartbeat,
} from '../../../src/provisioner/coordination/messages.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const hb: Heartbeat = { instance: 'prov-a.example.net', incarnation: '0011aabb', intervalMs: 2000, leaving: false, owned: 12, provisioned: 40, version: '1.2.3' };

describe('active/active messages', () => {
  it('round-trips a heartbeat and a done notice', () => {
    expect(parseHeartbeat(bytes(encodeHeartbeat(hb)))).toEqual(hb);
    expect(parseDone(bytes(encodeDone({ instance: 'prov-a.example.net', nodes: ['n1', 'n2'] })))).toEqual({ instance: 'prov-a.example.net', nodes: ['n1', 'n2'] });
    // with the sender's process id: two processes of one identity tell their notices apart
    expect(parseDone(bytes(encodeDone({ instance: 'prov-a.example.net', incarnation: '0011aabb', nodes: ['n1'] })))).toEqual({ instance: 'prov-a.example.net', incarnation: '0011aabb', nodes: ['n1'] });
  });

  it('uses subjects in the provisioning account that nodes may not publish to', () => {
    const s = coordinationSubjects('lon');
    expect(s).toEqual({ members: 'provisioning.coordination.lon.members', done: 'provisioning.coordination.lon.done' });
    // what go-choria lets a provisioning-mode server publish
    for (const allowed of ['choria.lifecycle.', 'provisioning.reply.', 'provisioning.registration.']) {
      expect(s.members.startsWith(allowed)).toBe(false);
      expect(s.done.startsWith(allowed)).toBe(false);
    }
  });

  it('rejects garbage with the reason', () => {
    const bad: [string, RegExp][] = [
      ['not json', /not JSON/],
      ['[1]', /not a JSON object/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), protocol: 'x' }), /protocol "x"/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), instance: '' }), /"instance" must be a non-empty string/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), interval_ms: 0 }), /"interval_ms" must be an integer >= 1/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), owned: -1 }), /"owned" must be an integer >= 0/],
      [JSON.stringify({ ...JSON.parse(encodeHeartbeat(hb)), leaving: 'no' }), /"leaving" must be a boolean/],
    ];
    for (const [text, reason] of bad) {
      expect(() => parseHeartbeat(bytes(text)), text).toThrow(CoordinationMessageError);
      expect(() => parseHeartbeat(bytes(text)), text).toThrow(reason);
    }
    expect(() => parseDone(bytes(JSON.stringify({ protocol: 'choria-provisioner:done:1', instance: 'a', nodes: ['ok', 3] })))).toThrow(/"nodes" must be an array/);
  });
});
