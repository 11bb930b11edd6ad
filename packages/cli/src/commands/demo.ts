// `choria-provisioner demo`: placeholder until the demo issue lands (README says so).
import { EXIT, type CliIO } from '../io.js';

export interface DemoOptions {
  mode: 'ed25519' | 'pki' | 'jwt' | 'plain';
  nodes: number;
  workers: number | undefined;
  debug: boolean;
}

export async function demoCommand(_opts: DemoOptions, io: CliIO): Promise<number> {
  io.err('choria-provisioner demo: not built yet (it needs the Provisioner and the fleet simulator; see README)');
  return EXIT.runtime;
}
