// Typed parsers for the `data` of each choria_provision / rpcutil reply: node answers are external
// input, so they are checked here and carried as typed values afterwards.
import { ProvisionerError } from '../util/errors.js';

export class NodeReplyError extends ProvisionerError {
  constructor(message: string) {
    super(message);
  }
}

function obj(data: unknown, what: string): Record<string, unknown> {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new NodeReplyError(`${what} reply data is not an object`);
  return data as Record<string, unknown>;
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
  const o = obj(data, 'choria_provision#jwt');
  return { jwt: str(o, 'jwt', 'choria_provision#jwt'), ecdhPublic: str(o, 'ecdh_public', 'choria_provision#jwt') };
}

export interface Ed25519Reply {
  public_key: string;
  directory: string;
  signature: string;
}

export function parseEd25519Reply(data: unknown): Ed25519Reply {
  const w = 'choria_provision#gen25519';
  const o = obj(data, w);
  return { public_key: str(o, 'public_key', w), directory: str(o, 'directory', w), signature: str(o, 'signature', w) };
}

export interface CsrReply {
  csr: string;
  public_key: string;
  ssldir: string;
}

export function parseCsrReply(data: unknown): CsrReply {
  const w = 'choria_provision#gencsr';
  const o = obj(data, w);
  return { csr: str(o, 'csr', w), public_key: str(o, 'public_key', w), ssldir: str(o, 'ssldir', w) };
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
  if (up !== undefined && up !== null && typeof up !== 'boolean') throw new NodeReplyError(`${w} reply field upgradable is a ${typeof up}, not a boolean`);
  return { text: JSON.stringify(o), version: str(o, 'version', w), upgradable: up === true };
}
