// Which `Host` a request to the monitor port may name before it is shown nodes or may send a
// control request. A web page on a name the attacker controls can make that name resolve to the
// provisioner's address (DNS rebinding) and read what the port answers through an operator's
// browser; the browser then sends the attacker's name as `Host`. So only the names the port is
// known by are served: IP literals, `localhost`, the address it is bound to and the names the
// operator lists (monitor_allowed_hosts). /metrics, /healthz and /readyz show no nodes and stay
// open to any Host, for Prometheus and orchestrators that reach the port by a name of their own.
import { isIP } from 'node:net';

/** The names a monitor port answers to, besides IP literals and `localhost`. */
export interface HostNames {
  /** the address the port is bound to (a name or an IP literal; 0.0.0.0 and :: add nothing) */
  readonly bindAddress?: string | undefined;
  /** names the operator lists (monitor_allowed_hosts), without port */
  readonly allowed?: readonly string[] | undefined;
}

/** The host part of a Host header, lower case, without port, brackets or a final dot; undefined when malformed. */
export function hostOfHeader(header: string): string | undefined {
  let host = header.trim().toLowerCase();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end < 0) return undefined;
    const rest = host.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return host.slice(1, end);
  }
  const colon = host.lastIndexOf(':');
  if (colon >= 0) {
    if (!/^\d{1,5}$/.test(host.slice(colon + 1))) return undefined;
    host = host.slice(0, colon);
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  return host === '' ? undefined : host;
}

const normalised = (name: string): string => (name.endsWith('.') ? name.slice(0, -1) : name).toLowerCase();

/** A check of the Host header against `names`; a request without one is refused. */
export function hostCheck(names: HostNames): (header: string | undefined) => boolean {
  const known = new Set((names.allowed ?? []).map(normalised));
  const bound = names.bindAddress === undefined ? undefined : normalised(names.bindAddress);
  if (bound !== undefined && bound !== '0.0.0.0' && bound !== '::') known.add(bound.replace(/^\[|\]$/g, ''));
  known.add('localhost');
  return (header) => {
    if (header === undefined) return false;
    const host = hostOfHeader(header);
    return host !== undefined && (isIP(host) !== 0 || known.has(host));
  };
}
