// The faults the interop rows inject beside the broker restarts and kills the lab already has: a
// provisioner paused and continued (SIGSTOP/SIGCONT: a long GC pause, a stopped VM, a debugger),
// and the TCP path between a provisioner and its broker made silent or slow (tcp-relay.ts).
import { sleep } from '../wait.js';
import type { LabProvisioner } from './provisioners.js';

export { startTcpRelay, type TcpRelay } from '../tcp-relay.js';

/**
 * Stops the provisioner's process (not its helpers, which go on and leave their answers in the
 * pipe) for `ms`, then continues it. Resolves once it runs again.
 */
export async function pauseProcess(p: LabProvisioner, ms: number): Promise<void> {
  process.kill(p.pid, 'SIGSTOP');
  try {
    await sleep(ms);
  } finally {
    process.kill(p.pid, 'SIGCONT');
  }
}
