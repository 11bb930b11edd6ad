// The go-choria releases that brought the provisioning features this emulator models. A node that
// reports an older version behaves like that release: no gen25519 before 0.25.0 (go-choria #1522),
// no provisioning lock before 0.29.0 (#2110). Versions that are not x.y.z (development builds)
// behave like the current release.
export const FEATURE_RELEASES = { gen25519: [0, 25, 0], provisioningLock: [0, 29, 0] } as const;
export type ReleasedFeature = keyof typeof FEATURE_RELEASES;

const RELEASE = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/;

export function versionHas(version: string, feature: ReleasedFeature): boolean {
  const m = RELEASE.exec(version);
  if (m === null) return true;
  const have = [Number(m[1]), Number(m[2]), Number(m[3])];
  const need = FEATURE_RELEASES[feature];
  for (let i = 0; i < 3; i++) {
    const h = have[i] ?? 0;
    const n = need[i] ?? 0;
    if (h !== n) return h > n;
  }
  return true;
}
