// Self-fencing, decided (lib/agent/isolation.ts), and the peers it looks at (lib/agent/peers.ts), with
// a clock the test moves, fake DNS and fake peers.
import assert from 'node:assert/strict';
import type { IsolationState, PeerLook } from '../../lib/agent/isolation.js';
import { NOT_ISOLATED, fenced, judgeIsolation } from '../../lib/agent/isolation.js';
import type { PeerProbe } from '../../lib/agent/peers.js';
import { Peers, firstTrue, isServerError, peerAddresses, podAddresses } from '../../lib/agent/peers.js';

const AFTER = 7000;
const LOOKS: readonly PeerLook[] = ['reached', 'alone', 'unreached', 'unknown'];
const cutOff = (p: PeerLook): boolean => p === 'unreached' || p === 'unknown';

/** Runs looks a second apart (each starting at t = i * 1000) on a member guarding writes; returns when it first fenced. */
function run(looks: readonly PeerLook[], guardsWrites = true): number | undefined {
  let state: IsolationState = NOT_ISOLATED;
  for (const [i, peers] of looks.entries()) {
    const v = judgeIsolation(state, { startedAt: i * 1000, guardsWrites, peers }, AFTER);
    if (v.action === 'fence') return i * 1000;
    state = v.state;
  }
  return undefined;
}

/** Every sequence of `n` looks. */
function* sequences(n: number): Generator<PeerLook[]> {
  if (n === 0) {
    yield [];
    return;
  }
  for (const head of sequences(n - 1)) for (const p of LOOKS) yield [...head, p];
}

describe('agent: self-fencing', () => {
  it('fences exactly when a run of looks that reached no member spans the delay, timed from the first of them (every sequence of 9 looks)', () => {
    let checked = 0;
    for (const looks of sequences(9)) {
      // The oracle: the first look that ends a run of cut-off looks begun at least AFTER earlier.
      let expected: number | undefined;
      let runStart: number | undefined;
      for (const [i, p] of looks.entries()) {
        if (!cutOff(p)) {
          runStart = undefined;
          continue;
        }
        runStart ??= i * 1000;
        if (i * 1000 - runStart >= AFTER) {
          expected = i * 1000;
          break;
        }
      }
      assert.equal(run(looks), expected, looks.join(' '));
      checked++;
    }
    assert.equal(checked, 4 ** 9);
  });

  it('never fences a member that does not guard writes (read-only, or semi-synchronous replication off), cut off or not', () => {
    assert.equal(run(Array<PeerLook>(20).fill('unreached'), false), undefined);
    assert.equal(run(Array<PeerLook>(20).fill('unknown'), false), undefined);
  });

  it('fences a member promoted before it ever looked its peers up, when DNS does not answer', () => {
    assert.equal(run(Array<PeerLook>(9).fill('unknown')), AFTER);
  });

  it('stays writable when a member answers, even with a refusal, or when DNS names no other member', () => {
    assert.equal(run(Array<PeerLook>(20).fill('alone')), undefined);
    assert.equal(run(Array<PeerLook>(20).fill('reached')), undefined);
  });

  it('goes on fencing, whatever the peers say, until the member is read-only', () => {
    let state = judgeIsolation(
      { isolatedSince: 0, fencing: false },
      { startedAt: AFTER, guardsWrites: true, peers: 'unreached' },
      AFTER,
    ).state;
    assert.equal(state.fencing, true);
    // The attempt failed (read-only timed out): the next look fences again although a peer answers now.
    state = fenced(false);
    const again = judgeIsolation(state, { startedAt: AFTER + 1000, guardsWrites: true, peers: 'reached' }, AFTER);
    assert.equal(again.action, 'fence');
    assert.equal(again.action === 'fence' && again.first, false);
    // Even once the source side is off (it no longer guards writes) and it is still writable.
    assert.equal(
      judgeIsolation(state, { startedAt: AFTER + 2000, guardsWrites: false, peers: 'reached' }, AFTER).action,
      'fence',
    );
    assert.deepEqual(fenced(true), NOT_ISOLATED);
  });
});

/** Peers whose answers the test sets; records who was asked. */
function fakeProbe(answering: Set<string>): PeerProbe & { asked: string[]; forgotten: string[] } {
  const asked: string[] = [];
  const forgotten: string[] = [];
  return {
    asked,
    forgotten,
    answers: (a) => {
      asked.push(a);
      return Promise.resolve(answering.has(a));
    },
    forget: (a) => void forgotten.push(a),
    close: () => Promise.resolve(),
  };
}

describe('agent: the peers it looks at', () => {
  it('finds peers by IPv6 as well, and never counts an address of its own as a peer (dual-stack)', () => {
    assert.deepEqual(peerAddresses(['fd00::11', 'fd00::12', 'fd00::10'], ['fd00::10']), ['fd00::11', 'fd00::12']);
    const own = podAddresses('10.1.0.10', '10.1.0.10,fd00::10');
    assert.deepEqual(own, ['10.1.0.10', '10.1.0.10', 'fd00::10']);
    assert.deepEqual(peerAddresses(['10.1.0.10', 'fd00::10', '10.1.0.11', 'fd00::11', '10.1.0.11'], own), [
      '10.1.0.11',
      'fd00::11',
    ]);
  });

  it('keeps the last known peers when DNS stops answering, and says so once', async () => {
    let dns: string[] | undefined = ['10.1.0.10', '10.1.0.11', '10.1.0.12'];
    const logged: string[] = [];
    const probe = fakeProbe(new Set());
    const peers = new Peers(
      'shop-headless',
      ['10.1.0.10'],
      (host) => (
        assert.equal(host, 'shop-headless'),
        dns ? Promise.resolve(dns) : Promise.reject(new Error('EAI_AGAIN'))
      ),
      probe,
      (m) => logged.push(m),
    );
    assert.equal(await peers.look(), 'unreached');
    dns = undefined;
    assert.equal(await peers.look(), 'unreached');
    assert.equal(await peers.look(), 'unreached');
    assert.deepEqual(probe.asked, ['10.1.0.11', '10.1.0.12', '10.1.0.11', '10.1.0.12', '10.1.0.11', '10.1.0.12']);
    assert.equal(logged.length, 1);
    assert.match(logged[0] ?? '', /keeping the last known: 10\.1\.0\.11 10\.1\.0\.12/);
    dns = ['10.1.0.10', '10.1.0.11'];
    assert.equal(await peers.look(), 'unreached');
    assert.deepEqual(probe.forgotten, ['10.1.0.12'], 'a member that left the Service is forgotten');
    assert.match(logged[1] ?? '', /can be looked up again/);
  });

  it('says "unknown" when DNS never answered, "alone" when it names no other member, "reached" when one answers', async () => {
    const none = new Peers(
      'h',
      ['10.1.0.10'],
      () => Promise.reject(new Error('EAI_AGAIN')),
      fakeProbe(new Set()),
      () => undefined,
    );
    assert.equal(await none.look(), 'unknown');
    const alone = new Peers(
      'h',
      ['10.1.0.10'],
      () => Promise.resolve(['10.1.0.10']),
      fakeProbe(new Set()),
      () => undefined,
    );
    assert.equal(await alone.look(), 'alone');
    const reached = new Peers(
      'h',
      ['10.1.0.10'],
      () => Promise.resolve(['10.1.0.11', '10.1.0.12']),
      fakeProbe(new Set(['10.1.0.12'])),
      () => undefined,
    );
    assert.equal(await reached.look(), 'reached');
  });

  it("never starts a second lookup while one hangs (getaddrinfo holds one of libuv's few threads)", async function () {
    this.timeout(10_000);
    let lookups = 0;
    const peers = new Peers(
      'h',
      [],
      () => {
        lookups++;
        return new Promise<string[]>(() => undefined);
      },
      fakeProbe(new Set()),
      () => undefined,
    );
    assert.equal(await peers.look(), 'unknown');
    assert.equal(await peers.look(), 'unknown');
    assert.equal(lookups, 1);
  });

  it('answers as soon as one peer does, without waiting for those cut off', async () => {
    const never = new Promise<boolean>(() => undefined);
    assert.equal(await firstTrue([never, Promise.resolve(true)]), true);
    assert.equal(await firstTrue([Promise.resolve(false), Promise.reject(new Error('x'))]), false);
    assert.equal(await firstTrue([]), false);
  });

  it("counts a server's refusal as an answer, and a client-side failure as none", () => {
    assert.equal(isServerError({ errno: 1045, code: 'ER_ACCESS_DENIED_ERROR' }), true);
    assert.equal(isServerError({ errno: 1129, code: 'ER_HOST_IS_BLOCKED' }), true);
    assert.equal(isServerError({ errno: 2003 }), false);
    assert.equal(isServerError({ code: 'ETIMEDOUT' }), false);
    assert.equal(isServerError(new Error('HANDSHAKE_SSL_ERROR')), false);
  });
});
