// The helper-less client as a process of its own, for the peer scenarios (bench/peer.mjs): the
// naive client of drivers.mjs (nats.js alone: discover, then W workers sending each node the
// product's RPCs one after the other, no helper, no checks beyond the reply status), measured from
// the outside like the provisioners beside it. When it is done it waits to be stopped, so that its
// CPU and memory can still be read from /proc.
// usage: node bench/client.mjs '{"url":"nats://…","flow":"jwt","workers":50,"keys":{…}}'
import { setInterval } from 'node:timers';
import { runNaive } from './drivers.mjs';

const spec = JSON.parse(process.argv[2] ?? '{}');
const run = await runNaive(spec.url, spec.flow, spec.workers, spec.keys);
if (run.failed > 0) process.stderr.write(`client: ${run.failed} nodes failed: ${run.firstErrors.join(' | ')}\n`);
// stays until the harness stops it; SIGTERM ends it as a normal exit, so that node --cpu-prof
// (bench/run.mjs --profile) writes its profile
process.once('SIGTERM', () => process.exit(0));
setInterval(() => undefined, 1 << 30);
