import { MAX_TIMER_DELAY_MS } from '../clock/index.js';
import type { Clock, TimerHandle } from '../clock/index.js';

interface Entry {
  readonly key: string;
  readonly readyAt: number;
  readonly seq: number;
}

/**
 * Keys waiting for a time (the delaying half of client-go's workqueue). `schedule(key, readyAt)`
 * keeps the earlier time when the key already waits; each key is handed to `onReady` once, when
 * its time has come, in time order (ties in scheduling order). One timer is armed, for the
 * earliest key; `stop()` clears it and forgets every waiting key.
 */
export class DelayedKeys {
  readonly #clock: Clock;
  readonly #onReady: (key: string) => void;
  // A min-heap with lazy deletion: an entry superseded by an earlier one stays in the heap and is
  // skipped when it surfaces (it is no longer what #byKey holds for its key).
  readonly #heap: Entry[] = [];
  readonly #byKey = new Map<string, Entry>();
  #seq = 0;
  #timer: TimerHandle | undefined;
  #armedAt: number | undefined;

  constructor(clock: Clock, onReady: (key: string) => void) {
    this.#clock = clock;
    this.#onReady = onReady;
  }

  get size(): number {
    return this.#byKey.size;
  }

  schedule(key: string, readyAt: number): void {
    const existing = this.#byKey.get(key);
    if (existing !== undefined && existing.readyAt <= readyAt) return;
    const entry = { key, readyAt, seq: this.#seq++ };
    this.#byKey.set(key, entry);
    this.#push(entry);
    if (this.#armedAt === undefined || readyAt < this.#armedAt) this.#arm();
  }

  stop(): void {
    this.#disarm();
    this.#heap.length = 0;
    this.#byKey.clear();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedAt = undefined;
    const now = this.#clock.now();
    for (let top = this.#peek(); top !== undefined && top.readyAt <= now; top = this.#peek()) {
      this.#pop();
      this.#byKey.delete(top.key);
      this.#onReady(top.key);
    }
    this.#arm();
  }

  #arm(): void {
    this.#disarm();
    const top = this.#peek();
    if (top === undefined) return;
    this.#armedAt = top.readyAt;
    const delay = Math.min(Math.max(0, top.readyAt - this.#clock.now()), MAX_TIMER_DELAY_MS);
    this.#timer = this.#clock.setTimeout(() => this.#fire(), delay);
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedAt = undefined;
  }

  /** The earliest live entry, after discarding superseded ones from the top. */
  #peek(): Entry | undefined {
    while (this.#heap.length > 0 && this.#byKey.get(this.#heap[0].key) !== this.#heap[0]) this.#pop();
    return this.#heap[0];
  }

  #push(entry: Entry): void {
    const h = this.#heap;
    h.push(entry);
    for (let i = h.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!before(h[i], h[parent])) break;
      [h[i], h[parent]] = [h[parent], h[i]];
      i = parent;
    }
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    h[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let min = i;
      if (l < h.length && before(h[l], h[min])) min = l;
      if (r < h.length && before(h[r], h[min])) min = r;
      if (min === i) break;
      [h[i], h[min]] = [h[min], h[i]];
      i = min;
    }
  }
}

function before(a: Entry, b: Entry): boolean {
  return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);
}
