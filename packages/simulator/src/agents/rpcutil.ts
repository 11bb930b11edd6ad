// rpcutil as far as a provisioner uses it: inventory, plus ping.
import { errorReply, okReply, StatusCode, type RpcReply } from './mcorpc.js';

export const RPCUTIL_AGENT = 'rpcutil';

/** Agents a simulated provisioning-mode server has loaded (sorted, as inventory reports them). */
export const LOADED_AGENTS: readonly string[] = ['choria_provision', 'discovery', 'rpcutil'];

export interface InventorySource {
  version: string;
  upgradable: boolean;
  facts: Record<string, unknown>;
}

export function handleRpcutil(action: string, src: InventorySource, nowMs: number): RpcReply {
  switch (action) {
    case 'inventory':
      return okReply(action, {
        agents: [...LOADED_AGENTS],
        classes: [],
        collectives: ['provisioning'],
        data_plugins: [],
        facts: src.facts,
        machines: [],
        main_collective: 'provisioning',
        version: src.version,
        upgradable: src.upgradable,
      });
    case 'ping':
      return okReply(action, { pong: Math.floor(nowMs / 1000) });
    default:
      return errorReply(action, StatusCode.UnknownAction, `Unknown action ${action} for agent ${RPCUTIL_AGENT}`);
  }
}
