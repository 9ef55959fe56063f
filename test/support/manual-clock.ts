import type { Clock, TimerHandle } from '../../lib/clock/index.js';

interface ManualTimer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

/**
 * A clock that moves only when told to (for tests). `advance(ms)` fires every timer that falls due, in
 * order, and lets promise continuations run between timers, so async loops driven by the clock make
 * progress as they would in real time.
 */
export class ManualClock implements Clock {
  private current: number;
  private nextId = 1;
  private readonly timers = new Map<number, ManualTimer>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: ManualTimer = { id: this.nextId++, at: this.current + Math.max(0, ms), fn };
    this.timers.set(timer.id, timer);
    return { id: timer.id };
  }

  clearTimeout(handle: TimerHandle): void {
    const id = (handle as { id?: unknown }).id;
    if (typeof id === 'number') this.timers.delete(id);
  }

  /** Number of pending timers (tests assert that stop() leaves none behind). */
  pending(): number {
    return this.timers.size;
  }

  /** Lets pending promise continuations and I/O callbacks run without moving time. */
  async flush(rounds = 10): Promise<void> {
    for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Moves time forward by `ms`, firing due timers in order and flushing continuations after each. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await this.flush();
    for (;;) {
      let due: ManualTimer | undefined;
      for (const t of this.timers.values()) {
        if (t.at <= target && (due === undefined || t.at < due.at || (t.at === due.at && t.id < due.id))) due = t;
      }
      if (due === undefined) break;
      this.timers.delete(due.id);
      this.current = Math.max(this.current, due.at);
      due.fn();
      await this.flush();
    }
    this.current = target;
    await this.flush();
  }
}
