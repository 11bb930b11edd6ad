// The helper-spawning companion process (see spawner.ts for why it exists). Started by the
// provisioner as `node spawner-child.js`, talking JSON lines on stdin and stdout
// (spawner-protocol.ts); spawner-runner.ts runs each helper in its own process group with three
// pipes and bounded output, and reports back. Imports nothing of the library: it must start fast
// and stay small.
import type { FromSpawner, ToSpawner } from './spawner-protocol.js';
import { processLauncher } from './spawner-runner.js';

function send(m: FromSpawner): void {
  // a pipe's writes are synchronous on Linux: a report is out before the next line runs
  process.stdout.write(`${JSON.stringify(m)}\n`);
}

const runner = processLauncher(send, { ...process.env });

// The provisioner closed the channel or died: no helper outlives it (a clean stop has none running).
function shutDown(): void {
  runner.killAll();
  process.exit(0);
}

function onLine(line: string): void {
  if (line.trim() === '') return;
  let m: ToSpawner;
  try {
    m = JSON.parse(line) as ToSpawner;
  } catch {
    return;
  }
  if (m.t === 'run') runner.run(m);
  else if (m.t === 'kill') runner.kill(m.id);
}

let partial = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  const lines = (partial + chunk).split('\n');
  partial = lines.pop() ?? '';
  for (const line of lines) onLine(line);
});
process.stdin.once('end', shutDown);
process.stdin.once('error', shutDown);
process.stdout.on('error', shutDown);
send({ t: 'ready', companion: 'node', protocol: 1 });
