import type { Clock, TimerHandle } from '../../lib/clock/index.js';

interface PendingTimer {
  readonly at: number;
  readonly fn: () => void;
}

/**
 * A Clock that moves only when told to. `advance(ms)` fires every timer due up to the new time, in
 * due order (ties in scheduling order), with `now()` set to each timer's due time while it runs;
 * timers scheduled by those callbacks fire too when they fall inside the window. Callbacks run
 * synchronously; settle promises they resolve with `await` afterwards.
 */
export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  readonly #timers = new Map<number, PendingTimer>();

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#nextId++;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    const id = (handle as { id?: unknown }).id;
    if (typeof id === 'number') this.#timers.delete(id);
  }

  /** Timers scheduled and neither fired nor cleared. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let due: [number, PendingTimer] | undefined;
      // Map iteration is in insertion (= id) order, so strict < keeps ties in scheduling order.
      for (const entry of this.#timers)
        if (entry[1].at <= target && (due === undefined || entry[1].at < due[1].at)) due = entry;
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.#now = Math.max(this.#now, due[1].at);
      due[1].fn();
    }
    this.#now = target;
  }
}
