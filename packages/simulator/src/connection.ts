// Nodes share NATS connections (a real fleet has one per server; thousands of sockets in one test
// process would be wasteful). Each node keeps its own provisioning.node.<identity> subscription; a
// broadcast is received once per connection, decoded once and handed to that connection's nodes.
import type { Msg, NatsConnection } from 'nats';
import type { SimulatedNode, NodeLink } from './node.js';
import { COLLECTIVES, DISCOVERY_AGENT } from './node.js';
import type { ViolationKind } from './violations.js';
import { collectiveAccepted, decodeRequest, ttlAccepted } from './wire/decode.js';
import type { ProtocolVersion } from './wire/types.js';
import type { ProtocolValidators } from './wire/validate.js';

/** Agents whose broadcast subjects a provisioning-mode server subscribes to. */
export const BROADCAST_AGENTS = ['discovery', 'rpcutil', 'choria_provision'] as const;

export interface GroupContext {
  validators: ProtocolValidators;
  /** records a violation that belongs to no single node */
  fleetViolation(kind: ViolationKind, detail: string): void;
  /** whether any node of the fleet speaks this protocol version */
  fleetSpeaks(version: ProtocolVersion): boolean;
}

export class ConnectionGroup implements NodeLink {
  private readonly attached = new Set<SimulatedNode>();
  private readonly url: string;

  constructor(
    readonly nc: NatsConnection,
    /** group 0 records fleet-wide violations of broadcasts (every group receives each broadcast) */
    readonly recordsFleetViolations: boolean,
    private readonly ctx: GroupContext,
  ) {
    this.url = `nats://${nc.getServer()}`;
    for (const agent of BROADCAST_AGENTS) {
      nc.subscribe(`provisioning.broadcast.agent.${agent}`, { callback: (_err, msg) => this.onBroadcast(msg) });
    }
  }

  publish(subject: string, payload: Uint8Array | string): void {
    if (this.nc.isClosed()) return;
    this.nc.publish(subject, payload);
  }

  brokerUrl(): string {
    return this.url;
  }

  subscribe(subject: string, onMessage: (data: Uint8Array) => void): { unsubscribe(): void } {
    const sub = this.nc.subscribe(subject, { callback: (_err, msg) => onMessage(msg.data) });
    return {
      unsubscribe: () => {
        if (!this.nc.isClosed()) sub.unsubscribe();
      },
    };
  }

  attach(node: SimulatedNode): void {
    this.attached.add(node);
  }

  detach(node: SimulatedNode): void {
    this.attached.delete(node);
  }

  private fleetViolation(kind: ViolationKind, detail: string): void {
    if (this.recordsFleetViolations) this.ctx.fleetViolation(kind, detail);
  }

  private onBroadcast(msg: Msg): void {
    if (this.attached.size === 0 && !this.recordsFleetViolations) return;
    const decoded = decodeRequest(msg.data, this.ctx.validators);
    if (!decoded.ok) {
      const id = decoded.requestId === undefined ? '' : `request ${decoded.requestId}: `;
      this.fleetViolation('schema', `broadcast on ${msg.subject}: ${id}${decoded.detail}`);
      return;
    }
    const req = decoded.request;
    if (!this.ctx.fleetSpeaks(req.version)) {
      this.fleetViolation(
        'protocol-version',
        `${req.version} broadcast request ${req.requestId} on ${msg.subject}, ` +
          `but no simulated node speaks ${req.version}`,
      );
      return;
    }
    if (!collectiveAccepted(req, COLLECTIVES)) {
      this.fleetViolation(
        'collective',
        `broadcast request ${req.requestId} for collective ${JSON.stringify(req.collective)}`,
      );
      return;
    }
    if (!ttlAccepted(req, Date.now())) {
      this.fleetViolation(
        'ttl-expired',
        `broadcast request ${req.requestId} created at ${new Date(req.timeMs).toISOString()} ` +
          `with ttl ${req.ttl}s is outside its validity`,
      );
      return;
    }
    if (req.agent === DISCOVERY_AGENT && !req.payload.includes('ping')) {
      this.fleetViolation(
        'discovery-payload',
        `discovery request ${req.requestId} payload does not contain ping after the server's base64 decode attempt`,
      );
      return;
    }
    for (const node of [...this.attached]) node.onBroadcast(req);
  }
}
