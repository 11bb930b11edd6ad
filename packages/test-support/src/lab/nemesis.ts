// A seeded random nemesis for the interop lab: a plan of faults drawn from a seed (the same seed
// gives the same plan, printed before it runs), and the means to carry it out against provisioner
// instances kept under a restart loop as systemd keeps a service (Restart=always, RestartSec=1):
// an instance paused (SIGSTOP) for a while, one killed (SIGKILL; its loop starts it again), the
// broker restarted, the instances' open connections gone silent for a while (a half-open path).
import { sleep } from '../wait.js';
import type { TcpRelay } from '../tcp-relay.js';
import type { LabBroker } from './broker.js';
import type { LabProvisioner } from './provisioners.js';

/** mulberry32: a small seeded generator, so a failing plan can be run again. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type NemesisAction =
  | { readonly kind: 'pause'; readonly instance: number; readonly ms: number }
  | { readonly kind: 'kill'; readonly instance: number }
  | { readonly kind: 'broker-restart'; readonly downMs: number }
  | { readonly kind: 'silence'; readonly ms: number };

export interface NemesisStep {
  /** from the start of the plan */
  readonly atMs: number;
  readonly action: NemesisAction;
}

export interface NemesisShape {
  readonly instances: number;
  readonly durationMs: number;
  /** the gap between two actions, drawn in [min, max] (default 3-10 s) */
  readonly gapMs?: readonly [number, number];
  /** a pause, drawn in [min, max] (default 4-20 s) */
  readonly pauseMs?: readonly [number, number];
  /** a silent path, drawn in [min, max] (default 5-30 s) */
  readonly silenceMs?: readonly [number, number];
}

/** The plan a seed gives: an action every 3-10 s, each of the four kinds alike likely. */
export function nemesisPlan(seed: number, shape: NemesisShape): NemesisStep[] {
  const random = seeded(seed);
  const within = ([min, max]: readonly [number, number]): number => Math.round(min + random() * (max - min));
  const steps: NemesisStep[] = [];
  for (let at = within(shape.gapMs ?? [3_000, 10_000]); at < shape.durationMs;) {
    const pick = Math.floor(random() * 4);
    const instance = Math.floor(random() * shape.instances);
    const action: NemesisAction =
      pick === 0
        ? { kind: 'pause', instance, ms: within(shape.pauseMs ?? [4_000, 20_000]) }
        : pick === 1
          ? { kind: 'kill', instance }
          : pick === 2
            ? { kind: 'broker-restart', downMs: 3_000 }
            : { kind: 'silence', ms: within(shape.silenceMs ?? [5_000, 30_000]) };
    steps.push({ atMs: at, action });
    at += within(shape.gapMs ?? [3_000, 10_000]);
  }
  return steps;
}

export function describeStep(s: NemesisStep): string {
  const a = s.action;
  const what =
    a.kind === 'pause'
      ? `pause instance ${a.instance + 1} for ${a.ms} ms`
      : a.kind === 'kill'
        ? `kill instance ${a.instance + 1}`
        : a.kind === 'broker-restart'
          ? `restart the broker (${a.downMs} ms down)`
          : `silence the open connections for ${a.ms} ms`;
  return `${(s.atMs / 1000).toFixed(1)} s: ${what}`;
}

/** One instance under a restart loop: started again a second after it died, until stop(). */
export class Supervised {
  readonly #start: (serial: number) => Promise<LabProvisioner>;
  readonly all: LabProvisioner[] = [];
  #current: LabProvisioner | undefined;
  #stopped = false;
  #loop: Promise<void> | undefined;
  #paused = false;

  constructor(start: (serial: number) => Promise<LabProvisioner>) {
    this.#start = start;
  }

  get current(): LabProvisioner | undefined {
    return this.#current;
  }

  async begin(): Promise<void> {
    await this.#spawn();
    this.#loop = this.#watch();
  }

  async #spawn(): Promise<void> {
    const p = await this.#start(this.all.length + 1);
    this.all.push(p);
    this.#current = p;
  }

  async #watch(): Promise<void> {
    while (!this.#stopped) {
      await sleep(250);
      if (this.#stopped || this.#current?.gone() !== true) continue;
      await sleep(1_000);
      if (!this.#stopped) await this.#spawn();
    }
  }

  /** SIGSTOP for `ms`, then SIGCONT; nothing when it is not running or already paused. */
  async pause(ms: number): Promise<void> {
    const p = this.#current;
    if (p === undefined || p.gone() || this.#paused) return;
    this.#paused = true;
    try {
      process.kill(p.pid, 'SIGSTOP');
      await sleep(ms);
    } finally {
      if (!p.gone()) process.kill(p.pid, 'SIGCONT');
      this.#paused = false;
    }
  }

  /** SIGKILL: the loop starts it again. */
  async kill(): Promise<void> {
    const p = this.#current;
    if (p === undefined || p.gone()) return;
    await p.stop('SIGKILL');
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#loop;
    const p = this.#current;
    if (p !== undefined && !p.gone()) {
      process.kill(p.pid, 'SIGCONT');
      await p.stop('SIGTERM');
    }
  }

  log(): string {
    return this.all.map((p) => p.log()).join('\n');
  }
}

export interface NemesisTargets {
  readonly instances: readonly Supervised[];
  readonly broker: LabBroker;
  readonly relay: TcpRelay;
}

/**
 * Carries out `plan` from now on, until its end or `done()`; every action starts at its time
 * (pauses and silences run on while the next ones begin). Resolves once all have ended.
 */
export async function runNemesis(
  plan: readonly NemesisStep[],
  t: NemesisTargets,
  done: () => boolean,
  say: (line: string) => void,
): Promise<void> {
  const start = Date.now();
  const running: Promise<unknown>[] = [];
  let brokerBusy: Promise<void> = Promise.resolve();
  for (const step of plan) {
    const wait = start + step.atMs - Date.now();
    if (wait > 0) await sleep(wait);
    if (done()) break;
    say(describeStep(step));
    const a = step.action;
    if (a.kind === 'pause') running.push(t.instances[a.instance]?.pause(a.ms) ?? Promise.resolve());
    else if (a.kind === 'kill') running.push(t.instances[a.instance]?.kill() ?? Promise.resolve());
    else if (a.kind === 'silence') {
      t.relay.goSilent();
      running.push(sleep(a.ms).then(() => t.relay.endSilence()));
    } else {
      brokerBusy = brokerBusy.then(async () => {
        await t.broker.stop();
        await sleep(a.downMs);
        await t.broker.start();
      });
      running.push(brokerBusy);
    }
  }
  await Promise.allSettled(running);
}
