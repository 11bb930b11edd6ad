// The pause flag of one provisioner instance (leader election pauses a standby). Listeners let the
// metrics gauge and the scheduler follow changes without polling.

export type PauseListener = (paused: boolean) => void;

export class PauseFlag {
  #paused: boolean;
  readonly #listeners = new Set<PauseListener>();

  constructor(initiallyPaused = false) {
    this.#paused = initiallyPaused;
  }

  get paused(): boolean {
    return this.#paused;
  }

  pause(): void {
    this.#set(true);
  }

  resume(): void {
    this.#set(false);
  }

  /** toggles and returns the new state */
  flip(): boolean {
    this.#set(!this.#paused);
    return this.#paused;
  }

  onChange(listener: PauseListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #set(value: boolean): void {
    if (value === this.#paused) return;
    this.#paused = value;
    for (const l of this.#listeners) l(value);
  }
}
