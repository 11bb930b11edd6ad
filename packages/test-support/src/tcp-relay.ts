// A TCP relay between a client and a broker, on loopback, for the faults a network path meets:
// - silence: every connection open now stops carrying bytes either way, and nothing is closed (a NAT
//   or firewall that dropped its state, a half-failed link); connections made afterwards work;
// - latency: every chunk is delayed, in order, by a fixed time each way.
// It listens on 127.0.0.1 only and forwards to a loopback address the test gives it.
import { createServer, connect, type Server, type Socket } from 'node:net';

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
  silent: boolean;
}

export interface TcpRelay {
  /** `nats://127.0.0.1:<port>`: what the client connects to */
  readonly url: string;
  readonly port: number;
  /** connections currently relayed (silent ones included) */
  readonly open: number;
  /** connections accepted since the relay started */
  readonly accepted: number;
  /** every connection open now goes silent; new ones are relayed as usual */
  goSilent(): void;
  /** the silent connections are reset at last (as a path that dropped its state finally does) */
  endSilence(): void;
  /** delay every chunk by `ms` each way from now on (0: none) */
  setLatency(ms: number): void;
  close(): Promise<void>;
}

/** Starts a relay to `target` (`host:port` or a `nats://` URL on loopback). */
export async function startTcpRelay(target: string): Promise<TcpRelay> {
  const url = new URL(target.includes('://') ? target : `nats://${target}`);
  const host = url.hostname;
  const targetPort = Number(url.port);
  if (host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]')
    throw new Error(`the relay forwards to loopback only, not ${host}`);
  const pairs = new Set<Pair>();
  let latencyMs = 0;
  let accepted = 0;
  const forward = (pair: Pair, from: Socket, to: Socket): void => {
    from.on('data', (chunk: Buffer) => {
      if (pair.silent) return;
      if (latencyMs <= 0) to.write(chunk);
      else setTimeout(() => !pair.silent && !to.destroyed && to.write(chunk), latencyMs);
    });
  };
  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect({ host, port: targetPort });
    const pair: Pair = { client, upstream, silent: false };
    pairs.add(pair);
    forward(pair, client, upstream);
    forward(pair, upstream, client);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    // a silent path closes nothing: only a real close or error of either side ends the pair
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the relay has no TCP address');
  const port = address.port;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    get open() {
      return pairs.size;
    },
    get accepted() {
      return accepted;
    },
    goSilent() {
      for (const p of pairs) p.silent = true;
    },
    endSilence() {
      for (const p of [...pairs].filter((pair) => pair.silent)) {
        p.client.destroy();
        p.upstream.destroy();
        pairs.delete(p);
      }
    },
    setLatency(ms: number) {
      latencyMs = ms;
    },
    async close() {
      for (const p of pairs) {
        p.client.destroy();
        p.upstream.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
