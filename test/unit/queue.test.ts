import assert from 'node:assert/strict';
import { FakeClock } from '../support/fake-clock.js';
import { ItemExponentialFailureRateLimiter } from '../../lib/queue/rate-limiter.js';
import { WorkQueue } from '../../lib/queue/work-queue.js';

/** Lets every promise continuation that is ready run (no wall-clock wait). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A get() whose result can be inspected without awaiting it. */
function pending(q: WorkQueue): { value: string | undefined; resolved: boolean } {
  const p = { value: undefined as string | undefined, resolved: false };
  void q.get().then((v) => {
    p.value = v;
    p.resolved = true;
  });
  return p;
}

describe('WorkQueue', () => {
  let clock: FakeClock;
  let q: WorkQueue;
  beforeEach(() => {
    clock = new FakeClock();
    q = new WorkQueue({ clock });
  });
  afterEach(() => q.shutDown());

  it('hands keys out in the order they were added', async () => {
    q.add('App/ns/a');
    q.add('App/ns/b');
    assert.equal(await q.get(), 'App/ns/a');
    assert.equal(await q.get(), 'App/ns/b');
  });

  it('ignores adding a key that is already waiting', async () => {
    q.add('App/ns/a');
    q.add('App/ns/b');
    q.add('App/ns/a');
    assert.equal(q.len(), 2);
    assert.equal(await q.get(), 'App/ns/a');
    assert.equal(await q.get(), 'App/ns/b');
    assert.equal(q.len(), 0);
  });

  it('parks a key re-added while it is processed and hands it out once after done', async () => {
    q.add('App/ns/a');
    const key = await q.get();
    assert.equal(key, 'App/ns/a');
    q.add('App/ns/a');
    q.add('App/ns/a');
    assert.equal(q.len(), 0, 'a key in flight is not ready');
    const second = pending(q);
    await settle();
    assert.equal(second.resolved, false, 'never handed to a second worker while in flight');
    q.done('App/ns/a');
    await settle();
    assert.deepEqual(second, { value: 'App/ns/a', resolved: true });
    const third = pending(q);
    q.done('App/ns/a');
    await settle();
    assert.equal(third.resolved, false, 'several adds in flight coalesce into one more run');
  });

  it('never hands one key to two waiting workers', async () => {
    const w1 = pending(q);
    const w2 = pending(q);
    q.add('App/ns/a');
    await settle();
    assert.deepEqual([w1.resolved, w2.resolved], [true, false]);
    q.add('App/ns/a');
    q.add('App/ns/b');
    await settle();
    assert.equal(w2.value, 'App/ns/b', 'the other worker gets another key, not the one in flight');
    q.done('App/ns/b');
    const w3 = pending(q);
    await settle();
    assert.equal(w3.resolved, false);
    q.done('App/ns/a');
    await settle();
    assert.equal(w3.value, 'App/ns/a');
  });

  it('ignores done for a key that is not in flight', async () => {
    q.done('App/ns/x');
    q.add('App/ns/a');
    assert.equal(await q.get(), 'App/ns/a');
  });

  it('adds a delayed key when its time has come', () => {
    q.addAfter('App/ns/a', 100);
    clock.advance(99);
    assert.equal(q.len(), 0);
    clock.advance(1);
    assert.equal(q.len(), 1);
  });

  it('keeps the earliest time when a key is delayed twice', async () => {
    q.addAfter('App/ns/a', 100);
    q.addAfter('App/ns/a', 50);
    q.addAfter('App/ns/a', 200);
    clock.advance(50);
    assert.equal(q.len(), 1);
    assert.equal(await q.get(), 'App/ns/a');
    q.done('App/ns/a');
    clock.advance(1000);
    assert.equal(q.len(), 0, 'the later times were dropped, not added again');
  });

  it('adds at once when the delay is not positive', () => {
    q.addAfter('App/ns/a', 0);
    q.addAfter('App/ns/b', -5);
    assert.equal(q.len(), 2);
  });

  it('releases delayed keys in time order', async () => {
    q.addAfter('App/ns/late', 30);
    q.addAfter('App/ns/early', 10);
    q.addAfter('App/ns/middle', 20);
    clock.advance(30);
    assert.deepEqual([await q.get(), await q.get(), await q.get()], ['App/ns/early', 'App/ns/middle', 'App/ns/late']);
  });

  it('backs a failing key off exponentially and forget resets it', async () => {
    const limited = new WorkQueue({ clock, rateLimiter: new ItemExponentialFailureRateLimiter(5, 1_000_000) });
    const readyAfter = async (): Promise<number> => {
      limited.addRateLimited('App/ns/a');
      let waited = 0;
      for (; limited.len() === 0 && waited < 1000; waited++) clock.advance(1);
      limited.done((await limited.get()) ?? '');
      return waited;
    };
    assert.deepEqual([await readyAfter(), await readyAfter(), await readyAfter()], [5, 10, 20]);
    assert.equal(limited.numRequeues('App/ns/a'), 3);
    limited.forget('App/ns/a');
    assert.equal(limited.numRequeues('App/ns/a'), 0);
    assert.equal(await readyAfter(), 5);
    limited.shutDown();
  });

  it('releases waiting getters with undefined on shutDown and ignores adds afterwards', async () => {
    const w1 = pending(q);
    const w2 = pending(q);
    q.shutDown();
    await settle();
    assert.deepEqual(
      [w1, w2],
      [
        { value: undefined, resolved: true },
        { value: undefined, resolved: true },
      ],
    );
    q.add('App/ns/a');
    q.addAfter('App/ns/b', 10);
    q.addRateLimited('App/ns/c');
    assert.equal(q.len(), 0);
    assert.equal(await q.get(), undefined);
    assert.equal(q.shuttingDown(), true);
  });

  it('drops waiting and delayed keys on shutDown and leaves no timer behind', async () => {
    q.add('App/ns/a');
    q.addAfter('App/ns/b', 1000);
    q.addRateLimited('App/ns/c');
    assert.ok(clock.pendingTimers > 0);
    q.shutDown();
    assert.equal(clock.pendingTimers, 0);
    assert.equal(q.len(), 0);
    assert.equal(await q.get(), undefined);
  });

  it('shutDownWithDrain resolves once every key handed out is done, without handing out dirty keys again', async () => {
    q.add('App/ns/a');
    q.add('App/ns/b');
    assert.equal(await q.get(), 'App/ns/a');
    assert.equal(await q.get(), 'App/ns/b');
    q.add('App/ns/a');
    let drained = false;
    const drain = q.shutDownWithDrain().then(() => {
      drained = true;
    });
    q.done('App/ns/a');
    await settle();
    assert.equal(drained, false);
    assert.equal(await q.get(), undefined, 'the dirty key is not handed out after shutdown');
    q.done('App/ns/b');
    await drain;
    assert.equal(drained, true);
  });

  it('shutDownWithDrain resolves at once when nothing is in flight', async () => {
    q.add('App/ns/a');
    await q.shutDownWithDrain();
  });
});
