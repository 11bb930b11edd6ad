// Lifecycle events as a go-choria server publishes them: Choria format or wrapped
// in a CloudEvents 1.0 envelope (the server default), on choria.lifecycle.event.<type>.<component>.
import { randomUUID } from 'node:crypto';
import { goJsonStringify } from './wire/gojson.js';

export type EventFormat = 'cloudevents' | 'choria' | 'none';
export type LifecycleEventType = 'startup' | 'shutdown' | 'provisioned' | 'upgraded';

/** component of a server in provisioning mode, and of a normal server */
export const PROVISION_MODE_COMPONENT = 'provision_mode_server';
export const SERVER_COMPONENT = 'server';

export interface LifecycleEventParams {
  type: LifecycleEventType;
  identity: string;
  component: string;
  /** server version (startup, upgraded) */
  version?: string;
  /** new version (upgraded) */
  newVersion?: string;
  nowMs: number;
  /** event id; a fresh UUIDv4 when absent */
  id?: string;
}

export interface EncodedEvent {
  subject: string;
  payload: string;
}

export function buildLifecycleEvent(p: LifecycleEventParams, format: EventFormat): EncodedEvent | undefined {
  if (format === 'none') return undefined;
  const id = p.id ?? randomUUID();
  const timestamp = Math.floor(p.nowMs / 1000);
  const protocol = `io.choria.lifecycle.v1.${p.type}`;
  const data: Record<string, unknown> = { protocol, id, identity: p.identity, component: p.component, timestamp };
  if (p.type === 'startup' || p.type === 'upgraded') data['version'] = p.version ?? '';
  if (p.type === 'upgraded') data['new_version'] = p.newVersion ?? '';
  const subject = `choria.lifecycle.event.${p.type}.${p.component}`;
  if (format === 'choria') return { subject, payload: goJsonStringify(data) };
  const envelope = {
    specversion: '1.0',
    id,
    source: 'io.choria.lifecycle',
    type: protocol,
    subject: p.identity,
    datacontenttype: 'application/json',
    time: new Date(timestamp * 1000).toISOString().replace('.000Z', 'Z'),
    data,
  };
  return { subject, payload: goJsonStringify(envelope) };
}
