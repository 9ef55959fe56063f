import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CREATE_ONLY, ChildApplier } from '../../lib/controller/apply-children.js';
import { RenderMemo } from '../../lib/controller/render-memo.js';
import type { StatusWrite } from '../../lib/controller/status.js';
import type { CustomResource } from '../../lib/controller/kind-controller.js';
import { judgedAgainst, nextStatus, statusWrite } from '../../lib/controller/status.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { applySetId, groupKind } from '../../lib/reconcile/applyset.js';
import { containsDesired, firstDifference } from '../../lib/reconcile/compare.js';
import { mergeConditions } from '../../lib/reconcile/conditions.js';
import { stampChildren } from '../../lib/reconcile/desired.js';
import { updatedAvailable, workloadConditions, workloadFigures } from '../../lib/reconcile/workload-conditions.js';

describe('comparing desired with live', () => {
  const desired = {
    spec: {
      replicas: 2,
      template: {
        spec: { containers: [{ name: 'app', image: 'nginx', resources: { limits: { memory: '1024Mi' } } }] },
      },
    },
  };

  it('accepts a live object that holds every desired field plus defaults and foreign fields', () => {
    const live = {
      metadata: { annotations: { foreign: 'x' } },
      spec: {
        replicas: 2,
        progressDeadlineSeconds: 600,
        template: {
          spec: {
            containers: [
              {
                name: 'app',
                image: 'nginx',
                terminationMessagePath: '/dev/termination-log',
                resources: { limits: { memory: '1Gi' } },
              },
            ],
          },
        },
      },
    };
    assert.ok(containsDesired(desired, live));
  });

  it('finds a changed field we own and names its path', () => {
    const live = { spec: { replicas: 3, template: { spec: { containers: [{ name: 'app', image: 'nginx' }] } } } };
    assert.equal(firstDifference(desired, live, ''), 'spec.replicas');
  });

  it("takes another manager's container, env entry or volume beside ours for no change (associative lists)", () => {
    const pod = (containers: unknown[], volumes: unknown[] = []): unknown => ({
      spec: { replicas: 2, template: { spec: { containers, volumes } } },
    });
    const ours = {
      name: 'app',
      image: 'nginx',
      env: [{ name: 'A', value: '1' }],
      resources: { limits: { memory: '1Gi' } },
      volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
    };
    const want = pod([ours], [{ name: 'tmp', emptyDir: {} }]);
    // An injected sidecar first, an extra env entry and mount, an extra volume: none of them ours.
    const live = pod(
      [
        { name: 'istio-proxy', image: 'proxy' },
        {
          ...ours,
          env: [{ name: 'INJECTED', value: 'x' }, ...ours.env],
          volumeMounts: [{ name: 'certs', mountPath: '/certs' }, ...ours.volumeMounts],
        },
      ],
      [
        { name: 'certs', secret: { secretName: 'c' } },
        { name: 'tmp', emptyDir: {} },
      ],
    );
    assert.equal(firstDifference(want, live, ''), undefined);
  });

  it('finds our list item that was removed or changed, by its key', () => {
    const live = { spec: { replicas: 2, template: { spec: { containers: [{ name: 'sidecar' }] } } } };
    assert.equal(firstDifference(desired, live, ''), 'spec.template.spec.containers[0]');
    const env = {
      containers: [
        {
          name: 'app',
          env: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
          ],
        },
      ],
    };
    assert.equal(
      firstDifference(
        env,
        {
          containers: [
            {
              name: 'app',
              env: [
                { name: 'B', value: '2' },
                { name: 'A', value: '9' },
              ],
            },
          ],
        },
        '',
      ),
      'containers[0].env[0].value',
    );
    assert.equal(
      firstDifference(env, { containers: [{ name: 'app', env: [{ name: 'B', value: '2' }] }] }, ''),
      'containers[0].env[0]',
    );
  });

  it('keys container ports by containerPort and protocol, Service ports by port and protocol (TCP by default)', () => {
    assert.equal(
      firstDifference(
        { ports: [{ containerPort: 80 }] },
        {
          ports: [
            { containerPort: 9090, protocol: 'TCP' },
            { containerPort: 80, protocol: 'TCP' },
          ],
        },
        '',
      ),
      undefined,
    );
    assert.equal(
      firstDifference(
        { ports: [{ containerPort: 53, protocol: 'UDP' }] },
        { ports: [{ containerPort: 53, protocol: 'TCP' }] },
        '',
      ),
      'ports[0]',
    );
    assert.equal(
      firstDifference(
        { ports: [{ port: 80, targetPort: 8080 }] },
        {
          ports: [
            { port: 80, protocol: 'TCP', targetPort: 8080 },
            { port: 443, protocol: 'TCP' },
          ],
        },
        '',
      ),
      undefined,
    );
    assert.equal(
      firstDifference(
        { ports: [{ port: 80, targetPort: 8080 }] },
        { ports: [{ port: 80, protocol: 'TCP', targetPort: 9090 }] },
        '',
      ),
      'ports[0].targetPort',
    );
  });

  it('owns an atomic list whole: command, args and tolerations must match item by item', () => {
    assert.equal(firstDifference({ command: ['a', 'b'] }, { command: ['a', 'b', 'c'] }, ''), 'command');
    assert.equal(firstDifference({ args: ['x'] }, { args: ['y'] }, ''), 'args[0]');
    assert.equal(
      firstDifference({ tolerations: [{ key: 'k' }] }, { tolerations: [{ key: 'other' }, { key: 'k' }] }, ''),
      'tolerations',
    );
  });

  it('finds an owner reference of ours by uid among others', () => {
    const ours = { metadata: { ownerReferences: [{ uid: 'u1', kind: 'App', controller: true }] } };
    assert.equal(
      firstDifference(
        ours,
        {
          metadata: {
            ownerReferences: [
              { uid: 'u0', kind: 'Other' },
              { uid: 'u1', kind: 'App', controller: true },
            ],
          },
        },
        '',
      ),
      undefined,
    );
    assert.equal(
      firstDifference(ours, { metadata: { ownerReferences: [{ uid: 'u0', kind: 'Other' }] } }, ''),
      'metadata.ownerReferences[0]',
    );
  });

  it('takes an absent live field for a zero value the API server omitted', () => {
    assert.ok(
      containsDesired(
        { probe: { initialDelaySeconds: 0, periodSeconds: 10 }, hostNetwork: false },
        { probe: { periodSeconds: 10 } },
      ),
    );
    assert.ok(!containsDesired({ probe: { initialDelaySeconds: 5 } }, { probe: {} }));
  });

  it('compares quantities by value, not by spelling', () => {
    assert.ok(
      containsDesired(
        { cpu: '500m', memory: '1Gi', storage: '10Gi' },
        { cpu: '0.5', memory: '1073741824', storage: '10240Mi' },
      ),
    );
    assert.ok(!containsDesired({ memory: '1Gi' }, { memory: '1G' }));
    assert.ok(!containsDesired({ image: 'nginx:1.27' }, { image: 'nginx:1.28' }));
  });
});

describe('ApplySet', () => {
  it('derives the parent id as KEP-3659 defines it', () => {
    // sha256("web.shop.App.recon8s.dev"), base64url without padding.
    assert.equal(
      applySetId({ name: 'web', namespace: 'shop', kind: 'App', group: 'recon8s.dev' }),
      'applyset-' + Buffer.from(sha256Hex('web.shop.App.recon8s.dev'), 'hex').toString('base64url') + '-v1',
    );
    assert.equal(groupKind('apps/v1', 'Deployment'), 'Deployment.apps');
    assert.equal(groupKind('v1', 'Service'), 'Service');
  });
});

// An independent computation of the digest (coreutils), so the test does not reuse the code under test.
function sha256Hex(s: string): string {
  const r = spawnSync('sha256sum', { input: s, encoding: 'utf8' });
  return r.stdout.split(' ')[0] ?? '';
}

describe('stamping children', () => {
  const owner = {
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'App',
    group: 'recon8s.dev',
    namespace: 'shop',
    name: 'web',
    uid: 'u-1',
  };
  const [child] = stampChildren(
    [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', labels: { a: 'b' } }, spec: {} }],
    owner,
  );

  it('makes the custom resource the controller owner, blocking owner deletion', () => {
    assert.deepEqual(child?.object.metadata.ownerReferences, [
      {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'App',
        name: 'web',
        uid: 'u-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it('adds ApplySet membership and keeps the rendered labels', () => {
    assert.equal(child?.object.metadata.labels?.a, 'b');
    assert.equal(child?.object.metadata.labels?.['applyset.kubernetes.io/part-of'], applySetId(owner));
    assert.equal(child?.object.metadata.namespace, 'shop');
  });

  it('hashes the rendered object so that a spec change shows', () => {
    const [other] = stampChildren(
      [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', labels: { a: 'c' } }, spec: {} }],
      owner,
    );
    assert.notEqual(child?.hash, other?.hash);
    assert.equal(child?.object.metadata.annotations?.['recon8s.dev/desired-hash'], child?.hash);
  });
});

describe('conditions', () => {
  const t0 = new Date('2026-01-01T00:00:00.123Z');
  const t1 = new Date('2026-01-01T00:05:00Z');

  it('keeps lastTransitionTime while the status does not change', () => {
    const first = mergeConditions(
      undefined,
      [{ type: 'Ready', status: 'False', reason: 'Unavailable', message: '0/2' }],
      1,
      t0,
    );
    assert.equal(first[0]?.lastTransitionTime, '2026-01-01T00:00:00Z');
    const same = mergeConditions(
      first,
      [{ type: 'Ready', status: 'False', reason: 'Unavailable', message: '1/2' }],
      2,
      t1,
    );
    assert.equal(same[0]?.lastTransitionTime, '2026-01-01T00:00:00Z');
    assert.equal(same[0]?.message, '1/2');
    assert.equal(same[0]?.observedGeneration, 2);
    const flipped = mergeConditions(
      same,
      [{ type: 'Ready', status: 'True', reason: 'Available', message: '2/2' }],
      2,
      t1,
    );
    assert.equal(flipped[0]?.lastTransitionTime, '2026-01-01T00:05:00Z');
  });

  it('is Ready only when every desired replica is updated and available', () => {
    const live = (status: Record<string, unknown>) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'x', generation: 3 },
      status,
    });
    const rolling = workloadConditions(
      'Deployment',
      workloadFigures(
        live({ observedGeneration: 3, replicas: 2, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2 }),
        2,
      ),
    );
    assert.deepEqual(
      rolling.map((c) => `${c.type}=${c.status}`),
      ['Ready=False', 'Progressing=True', 'Degraded=False'],
    );
    const done = workloadConditions(
      'Deployment',
      workloadFigures(
        live({ observedGeneration: 3, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 }),
        2,
      ),
    );
    assert.deepEqual(
      done.map((c) => `${c.type}=${c.status}`),
      ['Ready=True', 'Progressing=False', 'Degraded=False'],
    );
    const stale = workloadConditions(
      'Deployment',
      workloadFigures(
        live({ observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 }),
        2,
      ),
    );
    assert.equal(stale[0]?.status, 'False');
    const stuck = workloadConditions(
      'Deployment',
      workloadFigures(
        live({
          observedGeneration: 3,
          conditions: [
            {
              type: 'Progressing',
              status: 'False',
              reason: 'ProgressDeadlineExceeded',
              message: 'ReplicaSet "x" has timed out progressing.',
            },
          ],
        }),
        2,
      ),
    );
    assert.deepEqual(stuck[2], {
      type: 'Degraded',
      status: 'True',
      reason: 'ProgressDeadlineExceeded',
      message: 'ReplicaSet "x" has timed out progressing.',
    });
  });

  it('counts only updated pods as ready during a rollout: a stuck new pod is not hidden by the old ones', () => {
    const live = (status: Record<string, unknown>) => ({ metadata: { generation: 3 }, status });
    // Two old pods serve; the one new pod cannot pull its image (what the Deployment reports then).
    const stuck = workloadFigures(
      live({ observedGeneration: 3, replicas: 3, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2 }),
      2,
    );
    assert.equal(stuck?.updatedAvailable, 0);
    assert.deepEqual(workloadConditions('Deployment', stuck)[0], {
      type: 'Ready',
      status: 'False',
      reason: 'Unavailable',
      message: '0/2 updated replicas available (1 updated, 2 old still available)',
    });
    // Half-way: one new pod available, one old still there.
    const half = workloadFigures(
      live({ observedGeneration: 3, replicas: 3, updatedReplicas: 2, readyReplicas: 3, availableReplicas: 3 }),
      2,
    );
    assert.equal(half?.updatedAvailable, 2); // 3 available, at most 1 of them old
    assert.equal(workloadConditions('Deployment', half)[0]?.status, 'False', 'an old pod is still there');
  });

  it('bounds the updated available pods by what Kubernetes reports (never more than the truth)', () => {
    // [replicas, updated, available] → updated and available
    const cases: [number, number, number, number][] = [
      [2, 2, 2, 2], // no rollout
      [2, 2, 1, 1],
      [0, 0, 0, 0],
      [3, 1, 2, 0], // stuck: the old pods are the available ones
      [3, 2, 3, 2],
      [3, 1, 3, 1],
      [4, 2, 1, 0], // old pods not available: undercounted, never over
      [2, 1, 0, 0],
      [1, 2, 1, 1], // a status caught between updates: never more than available
    ];
    for (const [replicas, updated, available, expected] of cases)
      assert.equal(updatedAvailable(replicas, updated, available), expected, `${replicas}/${updated}/${available}`);
  });
});

describe('recognising the echo of our own apply', () => {
  const child = {
    object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } },
    hash: 'h1',
  };
  // Only apply() is used: the API server answers with the object as stored.
  const client = {
    apply: async () => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', uid: 'u1', resourceVersion: '7' },
    }),
  } as unknown as KubeClient;

  it('knows exactly the version its last apply returned, and nothing else', async () => {
    const applier = new ChildApplier(client);
    const version = (resourceVersion: string, uid = 'u1') => ({ metadata: { name: 'c', uid, resourceVersion } });
    assert.equal(applier.isOwnEcho(version('7')), false, 'nothing applied yet');
    await applier.apply(child, CREATE_ONLY);
    assert.equal(applier.isOwnEcho(version('7')), true);
    assert.equal(applier.isOwnEcho(version('8')), false, 'a later change by someone else');
    assert.equal(applier.isOwnEcho(version('7', 'u2')), false, 'another object');
    applier.forget('u1');
    assert.equal(applier.isOwnEcho(version('7')), false, 'forgotten with the object');
  });
});

describe('recognising an echo that overtakes the response of its write', () => {
  it('waits for the apply under way to that object, then knows its version', async () => {
    let answer: (v: unknown) => void = () => undefined;
    const client = {
      apply: () =>
        new Promise((resolve) => {
          answer = resolve;
        }),
    } as unknown as KubeClient;
    const applier = new ChildApplier(client);
    const child = {
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } },
      hash: 'h1',
    };
    const applied = applier.apply(child, CREATE_ONLY);
    // The watch event of the write, before its response was read.
    const event = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns', uid: 'u1' } };
    const echo = applier.isOwnEcho({ ...event, metadata: { ...event.metadata, resourceVersion: '7' } });
    const other = applier.isOwnEcho({ ...event, metadata: { ...event.metadata, resourceVersion: '8' } });
    const elsewhere = applier.isOwnEcho({ ...event, metadata: { ...event.metadata, name: 'd', resourceVersion: '7' } });
    assert.ok(echo instanceof Promise && other instanceof Promise, 'undecided while the apply is under way');
    assert.equal(elsewhere, false, 'no write under way to another object');
    answer({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'ns', uid: 'u1', resourceVersion: '7' },
    });
    await applied;
    assert.equal(await echo, true);
    assert.equal(await other, false, "someone else's version");
  });
});

describe('judging a status while the cache is behind our own status writes', () => {
  const at = (resourceVersion: string, members: string[]): CustomResource => ({
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'MySQLCluster',
    metadata: { name: 'db', namespace: 'ns', uid: 'u1', generation: 1, resourceVersion },
    status: {
      observedGeneration: 1,
      members,
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Unavailable',
          message: 'm',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    },
  });
  const ready = [{ type: 'Ready' as const, status: 'False' as const, reason: 'Unavailable', message: 'm' }];
  const t = (s: number): Date => new Date(`2026-01-01T00:00:0${s}Z`);
  /** Looks at `cr` with `members` as a reconcile does: the status written, if any, and what is remembered. */
  const look = (
    last: StatusWrite | undefined,
    cr: CustomResource,
    members: string[],
    wrote: string,
    own: string[],
    now = t(5),
  ): { written: Record<string, unknown> | undefined; last: StatusWrite | undefined } => {
    const status = nextStatus(judgedAgainst(cr, last), { members }, ready, now);
    return { written: status, last: status ? statusWrite(last, cr, status, wrote, own) : last };
  };

  it('writes each change once while the cache stays behind, however many versions it is behind', () => {
    // The ApplySet metadata got 2 back; then one status write per member, the cache still at 1.
    let last: StatusWrite | undefined;
    const own = ['2'];
    const members: string[] = [];
    for (const [i, name] of ['a', 'b', 'c', 'd', 'e', 'f'].entries()) {
      members.push(name);
      const r = look(last, at('1', []), [...members], String(10 + i), [...own]);
      assert.ok(r.written, `${name} is written`);
      own.push(String(10 + i));
      last = r.last;
      assert.equal(look(last, at('1', []), [...members], '99', own).written, undefined, `${name} once, from 1`);
    }
    // The watch catches up one version at a time: nothing is written again from any of them.
    for (const rv of ['1', '2', '10', '11', '12', '13', '14'])
      assert.equal(look(last, at(rv, ['a']), members, '99', own).written, undefined, `from ${rv}`);
  });

  it('keeps the lastTransitionTime it wrote when a condition changed, instead of writing a newer one', () => {
    const changed = [{ type: 'Ready' as const, status: 'True' as const, reason: 'Available', message: 'ok' }];
    const first = nextStatus(at('10', ['a']), {}, changed, t(5)) as Record<string, unknown>;
    const last = statusWrite(undefined, at('10', ['a']), first, '11', ['11']);
    assert.ok(nextStatus(at('10', ['a']), {}, changed, t(9)), 'judged from the cache, a newer lastTransitionTime');
    assert.equal(nextStatus(judgedAgainst(at('10', ['a']), last), {}, changed, t(9)), undefined);
  });

  it("judges from the cache once it holds our write, someone else's, or a version it does not know", () => {
    const written = nextStatus(at('10', ['a']), { members: ['a', 'b'] }, ready, t(5)) as Record<string, unknown>;
    const last = statusWrite(undefined, at('10', ['a']), written, '21', ['15', '21']);
    assert.deepEqual(last.behind, ['10', '15']);
    for (const rv of ['21', '30', '3']) {
      const cr = at(rv, ['a']);
      assert.equal(judgedAgainst(cr, last), cr, rv);
    }
    const cr = at('10', ['a']);
    assert.equal(judgedAgainst(cr, undefined), cr, 'nothing written yet');
    assert.deepEqual(
      (nextStatus(judgedAgainst(cr, last), { members: ['a', 'b', 'c'] }, ready, t(5)) as { members: string[] }).members,
      ['a', 'b', 'c'],
      'what changed since the last write is written',
    );
  });

  it('remembers a bounded number of older versions', () => {
    let last: StatusWrite | undefined;
    for (let i = 0; i < 100; i++) last = statusWrite(last, at(String(2 * i), []), {}, String(2 * i + 1), []);
    assert.ok((last?.behind.length ?? 0) <= 16);
    assert.ok(last?.behind.includes('198') && last.behind.includes('197'));
  });
});

describe('remembering renders', () => {
  const cr = (uid: string, generation: number | undefined, spec: Record<string, unknown> = {}): CustomResource => ({
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'App',
    metadata: { name: uid, namespace: 'ns', uid, ...(generation !== undefined ? { generation } : {}) },
    spec,
  });

  it('renders again only when the generation (or, without one, the inputs) changed', () => {
    const memo = new RenderMemo<number>();
    let renders = 0;
    const make = (): number => ++renders;
    assert.equal(memo.get(cr('a', 1), make), 1);
    assert.equal(memo.get(cr('a', 1), make), 1, 'same generation');
    assert.equal(memo.get(cr('a', 2), make), 2, 'new generation');
    assert.equal(memo.get(cr('b', undefined, { x: 1 }), make), 3);
    assert.equal(memo.get(cr('b', undefined, { x: 1 }), make), 3, 'same inputs');
    assert.equal(memo.get(cr('b', undefined, { x: 2 }), make), 4, 'other inputs');
    memo.forget('a');
    assert.equal(memo.get(cr('a', 2), make), 5, 'forgotten with the resource');
  });

  it("renders again when an App's password revision changes, though the generation does not (a rotation rolls the pods)", () => {
    const memo = new RenderMemo<number>();
    let renders = 0;
    const make = (): number => ++renders;
    const revised = (revision: string, generation?: number): CustomResource => {
      const base = cr('r', generation);
      return { ...base, metadata: { ...base.metadata, annotations: { 'recon8s.dev/password-revision': revision } } };
    };
    assert.equal(memo.get(cr('r', 3), make), 1);
    assert.equal(memo.get(revised('abc', 3), make), 2, 'revision set');
    assert.equal(memo.get(revised('abc', 3), make), 2, 'same revision');
    assert.equal(memo.get(revised('def', 3), make), 3, 'new revision');
    assert.equal(memo.get(revised('def'), make), 4, 'without a generation: the revision is an input');
    assert.equal(memo.get(revised('xyz'), make), 5);
  });

  it('holds at most its capacity, dropping the least recently used first', () => {
    const memo = new RenderMemo<string>(2);
    memo.get(cr('a', 1), () => 'a');
    memo.get(cr('b', 1), () => 'b');
    memo.get(cr('a', 1), () => 'a again'); // a is now the most recently used
    memo.get(cr('c', 1), () => 'c');
    assert.equal(memo.size, 2);
    assert.equal(
      memo.get(cr('a', 1), () => 'a rendered again'),
      'a',
      'kept',
    );
    assert.equal(
      memo.get(cr('b', 1), () => 'b rendered again'),
      'b rendered again',
      'dropped',
    );
  });
});
