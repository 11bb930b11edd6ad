// Closing a NATS connection so that a broker closing it at the same moment cannot crash the process.
//
// nats.js 2.29's node transport, on close(), removes every listener of its socket and destroys it,
// synchronously. When the broker has just closed the connection (its FIN ended the socket's
// writable side) and nats.js wrote to the socket shortly before - a publish flushed in the same
// microtask run - Node reports that write as an ERR_STREAM_WRITE_AFTER_END 'error' event on the
// next tick. By then the listeners are gone, and an 'error' event without a listener is thrown as
// an uncaught exception. The guard: the socket nats.js has just let go of gets an 'error'
// listener again, right after close() has removed them and before that next tick.
import { Socket } from 'node:net';
import type { NatsConnection } from 'nats';

/** The socket under a nats.js connection (internal to nats.js: undefined when its shape differs). */
function transportSocket(nc: NatsConnection): Socket | undefined {
  const internals = nc as unknown as { protocol?: { transport?: { socket?: unknown } } };
  const socket = internals.protocol?.transport?.socket;
  return socket instanceof Socket ? socket : undefined;
}

/** The error of a write nats.js made while the broker closed the connection: nobody waits for it any more. */
function ignoreLateSocketError(): void {}

/** nc.close(), with the guard described above. */
export async function closeNatsConnection(nc: NatsConnection): Promise<void> {
  const socket = transportSocket(nc);
  const closing = nc.close();
  // nats.js's close() ran up to removing the socket's listeners before it returned its promise
  socket?.on('error', ignoreLateSocketError);
  await closing;
}
