// Typed parsers for the `data` of each choria_provision / rpcutil reply: node answers are external
// input, so they are checked here and carried as typed values afterwards.
import { ProtocolError } from '../choria/errors.js';
import { isPlainObject } from '../util/values.js';

/** A reply's data is not of its action's shape: asking again gets the same (repeatingCannotHelp). */
export class NodeReplyError extends ProtocolError {}

function obj(data: unknown, what: string): Record<string, unknown> {
  if (!isPlainObject(data)) throw new NodeReplyError(`${what} reply data is not an object`);
  return data;
}

function str(o: Record<string, unknown>, key: string, what: string): string {
  const v = o[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new NodeReplyError(`${what} reply field ${key} is a ${typeof v}, not a string`);
  return v;
}

export interface JwtReply {
  jwt: string;
  ecdhPublic: string;
}

export function parseJwtReply(data: unknown): JwtReply {
  const reply = strings(data, 'choria_provision#jwt', ['jwt', 'ecdh_public']);
  return { jwt: reply.jwt, ecdhPublic: reply.ecdh_public };
}

/** The string fields `keys` of a reply's data; an absent or null field reads as empty, as Go's decoder leaves it. */
function strings<K extends string>(data: unknown, what: string, keys: readonly K[]): Record<K, string> {
  const o = obj(data, what);
  return Object.fromEntries(keys.map((key) => [key, str(o, key, what)])) as Record<K, string>;
}

export type Ed25519Reply = Record<'public_key' | 'directory' | 'signature', string>;

export function parseEd25519Reply(data: unknown): Ed25519Reply {
  return strings(data, 'choria_provision#gen25519', ['public_key', 'directory', 'signature']);
}

export type CsrReply = Record<'csr' | 'public_key' | 'ssldir', string>;

export function parseCsrReply(data: unknown): CsrReply {
  return strings(data, 'choria_provision#gencsr', ['csr', 'public_key', 'ssldir']);
}

export interface Inventory {
  /** the reply data re-serialised as JSON: handed to the helper as a string */
  text: string;
  version: string;
  upgradable: boolean;
}

export function parseInventoryReply(data: unknown): Inventory {
  const w = 'rpcutil#inventory';
  const o = obj(data, w);
  const up = o['upgradable'];
  if (up !== undefined && up !== null && typeof up !== 'boolean')
    throw new NodeReplyError(`${w} reply field upgradable is a ${typeof up}, not a boolean`);
  return { text: JSON.stringify(o), version: str(o, 'version', w), upgradable: up === true };
}
