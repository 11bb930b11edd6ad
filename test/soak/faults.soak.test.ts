// The fault soak against real go-choria servers (`npm run soak:lab`; LAB_SOAK_MINUTES, default 30;
// LAB_SOAK_SEED, default 1): two instances of one site with one identity, leader election, pki
// flow, the node history shared, both reaching the broker through the lab's TCP relay. Wave after
// wave of fresh servers is provisioned while a seeded random schedule of faults hits the
// instances and their paths: the leader paused for longer than its lease, the path going silent,
// 150 ms each way, an instance stopped and started again, the broker restarted. After each wave the
// servers themselves are the judge: every one provisioned (a server left with a certificate for a
// key it no longer has never is: bricked; one never reached: stuck), none configured twice.
import { describe, expect, it } from 'vitest';
import { sleep } from '@choria-provisioner/test-support/wait';
import {
  labAvailability,
  pauseProcess,
  recordResult,
  startTcpRelay,
  waitProvisioned,
  waitWaiting,
  withLab,
  type LabProvisioner,
} from '@choria-provisioner/test-support/lab/index';
import { seeded } from '@choria-provisioner/test-support/lab/nemesis';

const lab = labAvailability();
if (!lab.available) console.log(lab.skipLine);
const MINUTES = Number(process.env['LAB_SOAK_MINUTES'] ?? '30');
const SEED = Number(process.env['LAB_SOAK_SEED'] ?? '1');
const WAVE_SERVERS = Number(process.env['LAB_SOAK_SERVERS'] ?? '20');
const IDENTITY = 'provisioner.lab.example';
const FAULTS = ['pause-leader', 'silent-path', 'latency', 'restart-instance', 'restart-broker', 'none'] as const;
type Fault = (typeof FAULTS)[number];

describe.skipIf(!lab.available)('soak: a seeded schedule of faults against real go-choria servers', () => {
  it(
    `${MINUTES} minutes, seed ${SEED}: no server bricked, configured twice or stuck`,
    async () => {
      const random = seeded(SEED);
      await withLab(`soak-${SEED}`, async (l) => {
        const b = await l.broker({ electionTtl: '10s' });
        const url = `nats://127.0.0.1:${b.port}`;
        const relay = await startTcpRelay(url);
        const site = {
          site: 'lab',
          brokerUrls: [relay.url],
          features: { pki: true },
          yaml: { leader_election: true, workers: 8 },
        };
        const env = { LAB_HELPER_DELAY_MS: '2000' };
        let serial = 0;
        const start = async (): Promise<LabProvisioner> =>
          await l.provisioner({ kind: 'ours', name: `soak-${++serial}`, identity: IDENTITY, sites: [site], env });
        let instances = [await start(), await start()];
        const leader = async (): Promise<LabProvisioner | undefined> => {
          for (const p of instances) {
            const status = (await p.status().catch(() => undefined)) as { sites?: { leader?: boolean }[] } | undefined;
            if (status?.sites?.[0]?.leader === true) return p;
          }
          return undefined;
        };
        const ends = Date.now() + MINUTES * 60_000;
        const problems: string[] = [];
        let wave = 0;
        try {
          while (Date.now() < ends) {
            wave++;
            const fault: Fault = FAULTS[Math.floor(random() * FAULTS.length)] ?? 'none';
            const fleet = await l.fleet({
              prefix: `w${wave}`,
              count: WAVE_SERVERS,
              withConfig: true,
              provisioningUrls: [url],
              signCsr: true,
            });
            await fleet.start();
            await waitWaiting(fleet, 120_000);
            const t0 = Date.now();
            // the fault comes while the wave is in flight: its helpers take 2 s a node
            await sleep(1_000 + Math.floor(random() * 4_000));
            switch (fault) {
              case 'pause-leader': {
                const p = await leader();
                if (p !== undefined) await pauseProcess(p, 16_000);
                break;
              }
              case 'silent-path':
                relay.goSilent();
                break;
              case 'latency':
                relay.setLatency(150);
                break;
              case 'restart-instance': {
                const victim = instances[Math.floor(random() * instances.length)] as LabProvisioner;
                await victim.stop('SIGTERM');
                instances = [...instances.filter((p) => p !== victim), await start()];
                break;
              }
              case 'restart-broker':
                await b.stop();
                await sleep(3_000);
                await b.start();
                break;
              case 'none':
                break;
            }
            const r = await waitProvisioned([fleet], 240_000, t0);
            relay.setLatency(0);
            recordResult(`soak-wave-${fault}`, 'ours', r, { seed: SEED, wave });
            if (r.pending.length > 0)
              problems.push(
                `wave ${wave} (${fault}): ${r.pending.length} of ${r.states.length} servers not provisioned (bricked or stuck): ${r.pending.slice(0, 5).join(', ')}`,
              );
            if (r.configuredTwice.length > 0)
              problems.push(`wave ${wave} (${fault}): configured twice: ${r.configuredTwice.join(', ')}`);
            await fleet.stop();
            if (problems.length > 0) break;
          }
        } finally {
          await relay.close();
        }
        console.log(
          `soak seed ${SEED}: ${wave} waves of ${WAVE_SERVERS} servers in ${MINUTES} minutes, ${problems.length} problems`,
        );
        expect(problems).toEqual([]);
        expect(wave).toBeGreaterThan(0);
      });
    },
    (MINUTES + 10) * 60_000,
  );
});
