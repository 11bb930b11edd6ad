// Just what Membership uses of a NATS connection, with deliveries the test controls: what is
// published is kept, and a message arrives only when the test delivers it.
import type { NatsConnection } from 'nats';

type Callback = (err: Error | null, msg: { data: Uint8Array }) => void;

export class ScriptedConnection {
  readonly subs = new Map<string, Callback>();
  readonly published: { subject: string; data: Uint8Array }[] = [];
  subscribe(subject: string, opts: { callback: Callback }): { unsubscribe(): void } {
    this.subs.set(subject, opts.callback);
    return { unsubscribe: () => this.subs.delete(subject) };
  }
  publish(subject: string, data: string | Uint8Array): void {
    this.published.push({ subject, data: typeof data === 'string' ? new TextEncoder().encode(data) : data });
  }
  flush(): Promise<void> {
    return Promise.resolve();
  }
  deliver(subject: string, data: Uint8Array): void {
    this.subs.get(subject)?.(null, { data });
  }
  /** Delivers again what was published `index`-th (0 = the first): a heartbeat's echo. */
  echo(index: number): void {
    const p = this.published[index]!;
    this.deliver(p.subject, p.data);
  }
  /** As the connection type Membership takes. */
  get nc(): NatsConnection {
    return this as unknown as NatsConnection;
  }
}
