// A fleet reduced to its discovery answers: a raw connection that answers every broadcast
// discovery (protocol v1) through a test's own function, so a test decides who answers and when.
import { connect, type NatsConnection } from 'nats';
import { codecFor } from '../../../src/choria/protocol/codec.js';
import { nowNanoseconds } from '../../../src/choria/protocol/ids.js';

export type DiscoveryRequest = ReturnType<ReturnType<typeof codecFor>['decodeRequest']>;

/** Answers every discovery through `answer`, given the request and a function sending one node's reply. The caller closes the connection. */
export async function discoveryResponder(
  url: string,
  answer: (req: DiscoveryRequest, send: (sender: string) => void) => void,
): Promise<NatsConnection> {
  const raw = await connect({ servers: url });
  const codec = codecFor('v1');
  raw.subscribe('provisioning.broadcast.agent.discovery', {
    callback: (_err, msg) => {
      const req = codec.decodeRequest(msg.data);
      answer(req, (sender) =>
        raw.publish(
          req.headers.replyTo as string,
          codec.encodeReply({ requestId: req.id, sender, agent: 'discovery', timeNs: nowNanoseconds(), body: 'pong' })
            .transportJson,
        ),
      );
    },
  });
  await raw.flush();
  return raw;
}
