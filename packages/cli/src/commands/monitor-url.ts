// The commands that talk to a running provisioner's monitor port (status, pause, release, ...)
// take its base URL (`--url`); this joins it with an endpoint path.
export function monitorUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
