import assert from 'node:assert/strict';
import type { Outcome, RegisterOperation } from '../support/linearizability.js';
import { checkRegisters } from '../support/linearizability.js';

/** An operation of `client` on `key`, invoked at `invokeMs` and answered (or given up on) at `returnMs`. */
function op(
  client: number,
  kind: 'read' | 'write',
  value: number | null,
  invokeMs: number,
  returnMs: number,
  outcome: Outcome = 'ok',
  key = 1,
): RegisterOperation {
  return { client, key, kind, value, invokeMs, returnMs, outcome, ...(outcome === 'ok' ? {} : { error: 'timeout' }) };
}
const write = (client: number, value: number, from: number, to: number, outcome: Outcome = 'ok', key = 1) =>
  op(client, 'write', value, from, to, outcome, key);
const read = (client: number, value: number | null, from: number, to: number, outcome: Outcome = 'ok', key = 1) =>
  op(client, 'read', value, from, to, outcome, key);

/** A small deterministic generator (mulberry32), so the long histories are the same on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A linearizable history as a database would produce it: `clients` clients, each one operation at a
 * time, on `keys` registers; every operation takes effect at a random instant within its interval, and
 * reads return what the register held then. About one write in `unknownEvery` is unknown to its client
 * (it gives up 2 s after sending): half of those took effect at some instant within 5 s, half never did.
 */
function simulated(o: { ops: number; keys: number; clients: number; unknownEvery: number; seed: number }) {
  const rand = random(o.seed);
  const clock = Array.from({ length: o.clients }, () => rand() * 5);
  const made: { op: RegisterOperation & { value: number | null }; at: number | undefined }[] = [];
  let counter = 0;
  for (let i = 0; i < o.ops; i++) {
    const client = clock.indexOf(Math.min(...clock));
    const invokeMs = (clock[client] as number) + rand() * 2;
    // Mostly a few ms, now and then a slow one that many others overlap.
    const duration = rand() < 0.02 ? 20 + rand() * 200 : 0.3 + rand() * 5;
    const key = 1 + Math.floor(rand() * o.keys);
    const writing = rand() < 0.5;
    const unknown = writing && rand() < 1 / o.unknownEvery;
    const returnMs = unknown ? invokeMs + 2000 : invokeMs + duration;
    const at = unknown
      ? rand() < 0.5
        ? invokeMs + rand() * 5000
        : undefined
      : invokeMs + rand() * (returnMs - invokeMs);
    made.push({
      op: {
        client,
        key,
        kind: writing ? 'write' : 'read',
        value: writing ? ++counter : null,
        invokeMs,
        returnMs,
        outcome: unknown ? 'unknown' : 'ok',
      },
      at,
    });
    clock[client] = returnMs;
  }
  const state = new Map<number, number | null>();
  for (const m of [...made].filter((x) => x.at !== undefined).sort((a, b) => (a.at as number) - (b.at as number))) {
    if (m.op.kind === 'write') state.set(m.op.key, m.op.value);
    else m.op.value = state.get(m.op.key) ?? null;
  }
  return made.map((m) => m.op).sort((a, b) => a.invokeMs - b.invokeMs);
}

/** Linearizable by trying every order (a few operations only): the check's reference. */
function bruteForce(history: readonly RegisterOperation[]): boolean {
  const reads = history.filter((o) => o.kind === 'read' && o.outcome === 'ok');
  const writes = history.filter((o) => o.kind === 'write' && o.outcome === 'ok');
  const unknown = history.filter((o) => o.kind === 'write' && o.outcome === 'unknown');
  const ends = (o: RegisterOperation) => (o.outcome === 'unknown' ? Infinity : o.returnMs);
  const orders = (ops: RegisterOperation[]): boolean => {
    const placed: RegisterOperation[] = [];
    const rest = new Set(ops);
    const go = (state: number | null): boolean => {
      if (rest.size === 0) return true;
      for (const o of [...rest]) {
        // Nothing left may have returned before `o` was invoked (lenient at equal times, as the check is).
        if ([...rest].some((x) => x !== o && ends(x) < o.invokeMs)) continue;
        if (o.kind === 'read' && o.value !== state) continue;
        rest.delete(o);
        placed.push(o);
        if (go(o.kind === 'write' ? o.value : state)) return true;
        placed.pop();
        rest.add(o);
      }
      return false;
    };
    return go(null);
  };
  // Each unknown write took effect or did not.
  for (let mask = 0; mask < 1 << unknown.length; mask++)
    if (orders([...reads, ...writes, ...unknown.filter((_, i) => mask & (1 << i))])) return true;
  return false;
}

describe('linearizability checker for registers (test/support/linearizability.ts)', () => {
  describe('linearizable histories', () => {
    const linearizable = (history: RegisterOperation[]) => {
      const result = checkRegisters(history);
      assert.equal(result.verdict, 'linearizable', result.explanation);
      return result;
    };

    it('an empty history, and reads of a register never written (null)', () => {
      linearizable([]);
      linearizable([read(1, null, 0, 1), read(2, null, 0.5, 2)]);
    });

    it('one client after another: every read returns the last completed write', () => {
      linearizable([write(1, 1, 0, 1), read(2, 1, 2, 3), write(2, 2, 4, 5), read(1, 2, 6, 7), read(3, 2, 8, 9)]);
    });

    it('overlapping operations in an order real time allows: a slow write taking effect after a fast one it overlaps, reads during a write seeing either value until one sees the new one', () => {
      linearizable([write(1, 1, 0, 10), write(2, 2, 1, 3), read(3, 2, 3.5, 4), read(3, 1, 5, 6), read(2, 1, 11, 12)]);
      linearizable([
        write(1, 1, 0, 1),
        write(2, 2, 2, 10),
        read(3, 1, 3, 4),
        read(4, 2, 3.5, 5),
        read(3, 2, 6, 7),
        read(4, null, 20, 21, 'fail'),
      ]);
      // A read and a write sharing an instant count as concurrent.
      linearizable([write(1, 1, 0, 1), write(2, 2, 2, 5), read(3, 1, 5, 6)]);
    });

    it('an unknown write that took effect: read later, even long after its client gave up', () => {
      linearizable([write(1, 1, 0, 1), write(2, 2, 2, 4, 'unknown'), read(3, 2, 10, 11), read(3, 2, 500, 501)]);
      linearizable([write(1, 1, 0, 1), write(2, 2, 2, 4, 'unknown'), read(3, 1, 10, 11), read(3, 2, 600, 601)]);
    });

    it('an unknown write that never took effect: never read', () => {
      linearizable([write(1, 1, 0, 1), write(2, 2, 2, 4, 'unknown'), read(3, 1, 10, 11), read(1, 1, 900, 901)]);
    });

    it('failed writes never took effect, failed and unknown reads say nothing', () => {
      linearizable([
        write(1, 1, 0, 1),
        write(2, 2, 2, 3, 'fail'),
        read(3, 1, 4, 5),
        read(3, null, 6, 7, 'unknown'),
        read(1, null, 8, 9, 'fail'),
      ]);
    });

    it('keys are independent registers: each checked on its own', () => {
      const result = linearizable([
        write(1, 1, 0, 1, 'ok', 1),
        write(1, 2, 2, 3, 'ok', 2),
        read(2, 1, 4, 5, 'ok', 1),
        read(2, 2, 4, 5, 'ok', 2),
        read(3, null, 4, 5, 'ok', 3),
      ]);
      assert.deepEqual(
        result.keys.map((k) => [k.key, k.verdict]),
        [
          [1, 'linearizable'],
          [2, 'linearizable'],
          [3, 'linearizable'],
        ],
      );
      assert.match(result.summary, /^linearizable: 5 operations on 3 keys by 3 clients/);
    });
  });

  describe('histories that are not linearizable, explained', () => {
    const notLinearizable = (history: RegisterOperation[]) => {
      const result = checkRegisters(history);
      assert.equal(result.verdict, 'not linearizable', result.explanation);
      return result;
    };

    it('fails on a stale read after a completed write, naming the read and the write that completed before it', () => {
      const result = notLinearizable([
        write(1, 16, 1000, 1001),
        write(2, 17, 1002, 1003),
        read(3, 17, 1003.5, 1003.8),
        read(3, 16, 2004, 2005),
      ]);
      const key = result.keys[0];
      assert.deepEqual(
        key?.window?.map((o) => `${o.kind} ${o.value}`),
        ['write 16', 'write 17', 'read 16'],
      );
      assert.match(
        result.explanation,
        /read of key 1 by client 3 returned 16 at \[1\.004 s, 1\.005 s\], but write 16 by client 1 at \[0\.000 s, 0\.001 s\], completed before it; write 17 by client 2 at \[0\.002 s, 0\.003 s\], completed before it/,
      );
    });

    it('fails on issue 43: a read of a never-acknowledged write, then a read of the older value (the stranded commit a failover discarded), with the unknown write in the window', () => {
      const result = notLinearizable([
        write(1, 16, 0, 10),
        read(4, 16, 20, 25),
        write(2, 17, 100, 2100, 'unknown'),
        read(3, 17, 12_031, 12_044),
        read(4, 17, 12_050, 12_060),
        read(3, 16, 31_000, 31_010),
      ]);
      const window = result.keys[0]?.window ?? [];
      assert.deepEqual(
        window.map((o) => `client ${o.client} ${o.kind} ${o.value} ${o.outcome}`),
        // The latest of the two reads of 17: the window is as short as it can be.
        ['client 1 write 16 ok', 'client 2 write 17 unknown', 'client 4 read 17 ok', 'client 3 read 16 ok'],
      );
      assert.match(
        result.explanation,
        /read of key 1 by client 3 returned 16 at \[31\.000 s, 31\.010 s\], but write 16 by client 1 at \[0\.000 s, 0\.010 s\], completed before it; write 17 by client 2 was never acknowledged \(sent at 0\.100 s, given up at 2\.100 s\); read by client 4 returned 17 at \[12\.050 s, 12\.060 s\], before it/,
      );
      assert.match(
        result.explanation,
        /client 2 +write +17 +unknown +\[0\.100 s, \+∞\) \(given up at 2\.100 s: timeout\)/,
      );
    });

    it('fails on a read of a value never written, and on one whose write failed', () => {
      const never = notLinearizable([write(1, 1, 0, 1), read(2, 99, 2, 3)]);
      assert.deepEqual(never.keys[0]?.window?.length, 1);
      assert.match(
        never.explanation,
        /read of key 1 by client 2 returned 99 at \[0\.002 s, 0\.003 s\], but no write of 99 was ever sent/,
      );
      const failed = notLinearizable([write(1, 1, 0, 1), write(2, 2, 2, 3, 'fail'), read(3, 2, 4, 5)]);
      assert.match(failed.explanation, /but write 2 by client 2 at \[0\.002 s, 0\.003 s\] failed \(timeout\)/);
    });

    it('fails on a read of null after a completed write, and on two reads that see two writes in opposite orders', () => {
      notLinearizable([write(1, 1, 0, 1), read(2, null, 2, 3)]);
      notLinearizable([
        write(1, 1, 0, 10),
        write(2, 2, 0, 10),
        read(3, 1, 1, 2),
        read(3, 2, 3, 4),
        read(4, 2, 1, 2),
        read(4, 1, 3, 4),
      ]);
    });

    it('names only the key that fails, and counts relative times from startMs when given', () => {
      const result = checkRegisters(
        [
          write(1, 1, 100, 101, 'ok', 7),
          write(1, 2, 102, 103, 'ok', 7),
          read(2, 1, 104, 105, 'ok', 7),
          write(1, 3, 100, 101, 'ok', 8),
          read(2, 3, 102, 103, 'ok', 8),
        ],
        { startMs: 0 },
      );
      assert.deepEqual(
        result.keys.map((k) => [k.key, k.verdict]),
        [
          [7, 'not linearizable'],
          [8, 'linearizable'],
        ],
      );
      assert.match(result.explanation, /read of key 7 by client 2 returned 1 at \[0\.104 s, 0\.105 s\]/);
      assert.doesNotMatch(result.explanation, /key 8/);
    });

    it('shrinks a long history to the few operations that cannot be ordered', () => {
      const history = simulated({ ops: 2000, keys: 2, clients: 4, unknownEvery: 200, seed: 7 });
      // A read in the middle that returns the value of a write that completed long before the last one.
      const lastWrites = history.filter((o) => o.key === 1 && o.kind === 'write' && o.outcome === 'ok');
      const old = lastWrites[10] as RegisterOperation;
      const end = Math.max(...history.map((o) => o.returnMs));
      history.push(read(99, old.value, end + 10, end + 11));
      const result = notLinearizable(history);
      const window = result.keys.find((k) => k.key === 1)?.window ?? [];
      assert.ok(window.length <= 4, result.explanation);
      assert.ok(
        window.some((o) => o.client === 99),
        result.explanation,
      );
      assert.ok(
        window.some((o) => o.kind === 'write' && o.value === old.value),
        result.explanation,
      );
    });
  });

  it('agrees with trying every order on 3,000 small random histories (unknown and failed outcomes, overlapping times), and every window it prints is itself not linearizable', () => {
    const rand = random(43);
    const counts = { linearizable: 0, not: 0 };
    for (let i = 0; i < 3000; i++) {
      const history: RegisterOperation[] = [];
      let value = 0;
      const size = 2 + Math.floor(rand() * 6);
      for (let j = 0; j < size; j++) {
        const invokeMs = Math.floor(rand() * 10);
        const returnMs = invokeMs + Math.floor(rand() * 4);
        const r = rand();
        const outcome: Outcome = r < 0.15 ? 'unknown' : r < 0.22 ? 'fail' : 'ok';
        if (rand() < 0.5) history.push(write(1 + (j % 3), ++value, invokeMs, returnMs, outcome));
        else {
          const seen = Math.floor(rand() * (value + 2));
          history.push(read(1 + (j % 3), seen === 0 ? null : seen, invokeMs, returnMs, outcome));
        }
      }
      const expected = bruteForce(history);
      const result = checkRegisters(history);
      assert.equal(result.verdict === 'linearizable', expected, `${JSON.stringify(history)}\n${result.explanation}`);
      if (expected) counts.linearizable++;
      else {
        counts.not++;
        const window = result.keys[0]?.window ?? [];
        assert.equal(bruteForce(window), false, `${JSON.stringify(history)}\n${result.explanation}`);
      }
    }
    // Both kinds, many of each.
    assert.ok(counts.linearizable > 500 && counts.not > 500, JSON.stringify(counts));
  });

  it('answers undecided, never hangs, when the search needs more steps than its budget', () => {
    const history = simulated({ ops: 400, keys: 1, clients: 4, unknownEvery: 50, seed: 3 });
    const result = checkRegisters(history, { budget: 50 });
    assert.equal(result.verdict, 'undecided');
    assert.match(result.explanation, /key 1: undecided after 51 search steps over \d+ operations \(the budget\)/);
  });

  it('checks 10,000 operations on 4 and on 8 keys by 6 clients with a handful of unknown writes, linearizable and with one stale read added', function () {
    this.timeout(120_000);
    for (const keys of [4, 8]) {
      const history = simulated({ ops: 10_000, keys, clients: 6, unknownEvery: 1000, seed: keys });
      assert.ok(history.filter((o) => o.outcome === 'unknown').length >= 2);
      const result = checkRegisters(history);
      assert.equal(result.verdict, 'linearizable', result.explanation);
      console.log(`      ${result.summary}; ${result.keys.reduce((n, k) => n + k.steps, 0)} search steps`);
      // One read in the middle of the run that returns the value before the last completed write.
      const middle = (history[5000] as RegisterOperation).returnMs;
      const writes = history.filter((o) => o.key === 2 && o.kind === 'write' && o.outcome === 'ok');
      const before = writes.filter((w) => w.returnMs < middle);
      const stale = before.at(-2) as RegisterOperation;
      const stranded = [...history, read(77, stale.value, middle + 0.01, middle + 0.02, 'ok', 2)];
      const failed = checkRegisters(stranded);
      assert.equal(failed.verdict, 'not linearizable');
      assert.ok((failed.keys[1]?.window?.length ?? 99) <= 4, failed.explanation);
      console.log(`      with a stale read: ${failed.keys.reduce((n, k) => n + k.steps, 0)} search steps`);
    }
  });
});
