import assert from 'node:assert/strict';
import { FakeClock } from '../support/fake-clock.js';
import {
  BucketRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  defaultControllerRateLimiter,
} from '../../lib/queue/rate-limiter.js';

describe('rate limiters', () => {
  describe('ItemExponentialFailureRateLimiter', () => {
    it('doubles from 5 ms per failure of a key', () => {
      const l = new ItemExponentialFailureRateLimiter(5, 1_000_000);
      assert.deepEqual(
        Array.from({ length: 6 }, () => l.when('App/ns/a')),
        [5, 10, 20, 40, 80, 160],
      );
      assert.equal(l.numRequeues('App/ns/a'), 6);
    });

    it('caps at 1000 s and stays there however many failures follow', () => {
      const l = new ItemExponentialFailureRateLimiter(5, 1_000_000);
      const delays = Array.from({ length: 2000 }, () => l.when('App/ns/a'));
      assert.equal(delays[17], 5 * 2 ** 17);
      assert.equal(delays[18], 1_000_000, '5 ms · 2^18 would exceed 1000 s');
      assert.ok(delays.slice(18).every((d) => d === 1_000_000));
    });

    it('tracks keys separately and forget resets one', () => {
      const l = new ItemExponentialFailureRateLimiter(5, 1_000_000);
      l.when('App/ns/a');
      l.when('App/ns/a');
      assert.equal(l.when('App/ns/b'), 5);
      l.forget('App/ns/a');
      assert.equal(l.numRequeues('App/ns/a'), 0);
      assert.equal(l.when('App/ns/a'), 5);
      assert.equal(l.numRequeues('App/ns/b'), 1);
    });
  });

  describe('BucketRateLimiter', () => {
    it('lets a burst through, then spaces calls at 1/qps, and refills with time', () => {
      const clock = new FakeClock();
      const l = new BucketRateLimiter({ qps: 10, burst: 100, clock });
      const burst = Array.from({ length: 100 }, () => l.when());
      assert.ok(burst.every((d) => d === 0));
      assert.equal(l.when(), 100);
      assert.equal(l.when(), 200);
      clock.advance(1000);
      // 10 tokens came back, 2 of which repay the debt.
      assert.deepEqual(
        Array.from({ length: 9 }, () => l.when()),
        [0, 0, 0, 0, 0, 0, 0, 0, 100],
      );
    });

    it('never holds more than burst tokens', () => {
      const clock = new FakeClock();
      const l = new BucketRateLimiter({ qps: 10, burst: 3, clock });
      clock.advance(3_600_000);
      assert.deepEqual([l.when(), l.when(), l.when(), l.when()], [0, 0, 0, 100]);
    });
  });

  describe('defaultControllerRateLimiter', () => {
    it('is the longer of the per-key backoff and the global bucket', () => {
      const clock = new FakeClock();
      const l = defaultControllerRateLimiter(clock);
      const first = Array.from({ length: 100 }, (_, i) => l.when(`App/ns/k${i}`));
      assert.ok(
        first.every((d) => d === 5),
        'within the burst, the per-key 5 ms rules',
      );
      assert.equal(l.when('App/ns/k100'), 100, 'past the burst, the global bucket rules');
      assert.equal(l.numRequeues('App/ns/k0'), 1);
      l.forget('App/ns/k0');
      assert.equal(l.numRequeues('App/ns/k0'), 0);
    });
  });

  it('MaxOfRateLimiter asks every limiter every time', () => {
    const a = new ItemExponentialFailureRateLimiter(1, 1000);
    const b = new ItemExponentialFailureRateLimiter(3, 1000);
    const l = new MaxOfRateLimiter(a, b);
    assert.deepEqual([l.when('k'), l.when('k')], [3, 6]);
    assert.deepEqual([a.numRequeues('k'), b.numRequeues('k'), l.numRequeues('k')], [2, 2, 2]);
  });
});
