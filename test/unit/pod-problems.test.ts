import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { V1ContainerStatus, V1Pod, V1PodSpec, V1PodStatus } from '@kubernetes/client-node';
import { MYSQL_GAVE_UP_PREFIX } from '../../constructs/index.js';
import type { PodProblem } from '../../lib/reconcile/pod-problems.js';
import {
  CRASH_WINDOW_MS,
  describePodProblem,
  podProblem,
  podProblemEvents,
  podNote,
  podProblems,
  podProgress,
  podRecheckAfterMs,
  summarizePodProblems,
} from '../../lib/reconcile/pod-problems.js';

/**
 * Pods as kubelet 1.36 and kube-scheduler reported them on the real node (containerd, no registry
 * reachable), captured with `kubectl get pod -o json` every 2 s while they started; trimmed to the
 * fields that matter. Keyed by the state they were caught in.
 */
const REAL = JSON.parse(readFileSync(new URL('fixtures/kubelet-pods.json', import.meta.url), 'utf8')) as Record<
  string,
  V1Pod
>;
const real = (key: string): V1Pod => {
  const pod = REAL[key];
  if (!pod) throw new Error(`no fixture ${key}`);
  return structuredClone(pod);
};

/** Soon after everything in the fixtures happened. */
const NOW = new Date('2026-11-25T15:57:00Z');
const problem = (pod: V1Pod, now = NOW): PodProblem | undefined => podProblem(pod, now);
/** The problem without the pod's identity, to compare states of one pod. */
const what = (p: PodProblem | undefined): Omit<PodProblem, 'pod' | 'uid' | 'recheckInMs'> | undefined => {
  if (!p) return undefined;
  const { pod: _pod, uid: _uid, recheckInMs: _recheck, ...rest } = p;
  return rest;
};

/** A scheduled pod with one container in this state (a synthetic variation of the real shapes). */
function pod(
  name: string,
  container: Partial<V1ContainerStatus>,
  extra: { status?: Partial<V1PodStatus>; spec?: Partial<V1PodSpec>; deleting?: boolean } = {},
): V1Pod {
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      ...(extra.deleting ? { deletionTimestamp: new Date('2026-11-25T15:56:00Z') } : {}),
    },
    spec: { containers: [{ name: 'web', image: 'recon8s.test/web:1' }], ...extra.spec },
    status: {
      phase: 'Running',
      conditions: [{ type: 'PodScheduled', status: 'True' }],
      containerStatuses: [
        { name: 'web', image: 'recon8s.test/web:1', imageID: '', ready: false, restartCount: 0, ...container },
      ],
      ...extra.status,
    },
  };
}

describe('pod problems: what the kubelet and the scheduler report, decided', () => {
  describe('image pulls', () => {
    it('names the image and the error of a failed pull (ErrImagePull), never "no problems found"', () => {
      assert.deepEqual(problem(real('ErrImagePull')), {
        pod: 'pull-ifnotpresent',
        uid: real('ErrImagePull').metadata?.uid,
        reason: 'ImagePullFailed',
        status: 'ImagePullBackOff',
        container: 'web',
        detail:
          'failed to pull and unpack image "recon8s.test/does-not-exist:1": failed to resolve reference "recon8s.test/does-not-exist:1": failed to do request: Head "https://recon8s.test/v2/does-not-exist/manifests/1": dial tcp: lookup recon8s.test on 10.255.255.53:53: no such host',
      });
    });

    it('says the same while the kubelet backs off (ImagePullBackOff) as when it retries: no rewrite at each retry', () => {
      assert.deepEqual(problem(real('ImagePullBackOff')), problem(real('ErrImagePull')));
    });

    it('reports ErrImageNeverPull and InvalidImageName with the kubelet message', () => {
      assert.deepEqual(what(problem(real('ErrImageNeverPull'))), {
        reason: 'ImagePullFailed',
        status: 'ErrImageNeverPull',
        container: 'web',
        detail: 'Container image "recon8s.test/does-not-exist:1" is not present with pull policy of Never',
      });
      assert.deepEqual(what(problem(real('InvalidImageName'))), {
        reason: 'ImagePullFailed',
        status: 'InvalidImageName',
        container: 'web',
        detail:
          'Failed to apply default image tag "Bad//Image:x:y": couldn\'t parse image name "Bad//Image:x:y": invalid reference format: repository name (/Image) must be lowercase',
      });
    });

    it('names the image when the back-off message carries no error (older kubelets)', () => {
      const p = pod('web-1', {
        state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "recon8s.test/web:9"' } },
      });
      assert.equal(problem(p)?.detail, 'image "recon8s.test/web:1" cannot be pulled');
    });

    it('cuts a long message at 300 characters and folds its lines', () => {
      const p = pod('web-1', { state: { waiting: { reason: 'ErrImagePull', message: `x\n${'y'.repeat(400)}` } } });
      const detail = problem(p)?.detail ?? '';
      assert.equal(detail.length, 300);
      assert.ok(detail.startsWith('x y') && detail.endsWith('…'));
    });
  });

  describe('scheduling', () => {
    it('gives the scheduler verdict without its preemption postscript (Insufficient cpu)', () => {
      assert.deepEqual(what(problem(real('Unschedulable-cpu'))), {
        reason: 'PodUnschedulable',
        status: 'Unschedulable',
        detail: '0/1 nodes are available: 1 Insufficient cpu.',
      });
    });

    it('names the claims of a pod that waits for them (missing, or no volume to bind)', () => {
      assert.deepEqual(what(problem(real('Unschedulable-claim-missing'))), {
        reason: 'ClaimPending',
        status: 'Unschedulable',
        detail:
          'waiting for claim missing-claim: 0/1 nodes are available: persistentvolumeclaim "missing-claim" not found.',
      });
      assert.deepEqual(what(problem(real('Unschedulable-claim-unbound'))), {
        reason: 'ClaimPending',
        status: 'Unschedulable',
        detail:
          "waiting for claim huge-claim: 0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind.",
      });
    });

    it('names an ephemeral volume by the claim Kubernetes makes for it', () => {
      const p = real('Unschedulable-claim-unbound');
      p.spec = { ...p.spec, containers: p.spec?.containers ?? [], volumes: [{ name: 'scratch', ephemeral: {} }] };
      assert.match(problem(p)?.detail ?? '', /^waiting for claim pending-claim-scratch: /);
    });

    it('is not a problem before the scheduler looked, while gated, or while a preemption makes room', () => {
      const unscheduled = real('Unschedulable-cpu');
      assert.equal(problem({ ...unscheduled, status: { phase: 'Pending' } }), undefined);
      assert.equal(
        problem({
          ...unscheduled,
          status: {
            phase: 'Pending',
            conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated', message: 'gated' }],
          },
        }),
        undefined,
      );
      assert.equal(problem({ ...unscheduled, status: { ...unscheduled.status, nominatedNodeName: 'n1' } }), undefined);
    });
  });

  describe('init containers', () => {
    it('reports an init image that cannot be pulled as Init:ImagePullBackOff, retry or back-off alike', () => {
      assert.deepEqual(what(problem(real('Init-ErrImagePull'))), {
        reason: 'ImagePullFailed',
        status: 'Init:ImagePullBackOff',
        container: 'init',
        detail:
          'failed to pull and unpack image "recon8s.test/mysql:does-not-exist": failed to resolve reference "recon8s.test/mysql:does-not-exist": failed to do request: Head "https://recon8s.test/v2/mysql/manifests/does-not-exist": dial tcp: lookup recon8s.test on 10.255.255.53:53: no such host',
      });
      assert.deepEqual(problem(real('Init-ImagePullBackOff')), problem(real('Init-ErrImagePull')));
      assert.equal(
        describePodProblem(problem(real('Init-ImagePullBackOff')) as PodProblem),
        'Init:ImagePullBackOff: failed to pull and unpack image "recon8s.test/mysql:does-not-exist": failed to resolve reference "recon8s.test/mysql:does-not-exist": failed to do request: Head "https://recon8s.test/v2/mysql/manifests/does-not-exist": dial tcp: lookup recon8s.test on 10.255.255.53:53: no such host',
      );
    });

    it('takes a first run of an init container for progress', () => {
      assert.equal(problem(real('Init-running-first')), undefined);
    });

    it('reports a failed init container by its exit code, just exited or backing off alike', () => {
      const failed = {
        reason: 'InitContainerFailed',
        status: 'Init:CrashLoopBackOff',
        container: 'init',
        detail: 'exited with code 2 (Error)',
      };
      assert.deepEqual(what(problem(real('Init-Error'))), failed);
      assert.deepEqual(what(problem(real('Init-CrashLoopBackOff'))), failed);
      // Running again after the failure: still failing until it completes.
      const rerun = real('Init-CrashLoopBackOff');
      const init = rerun.status?.initContainerStatuses?.[0];
      if (init) init.state = { running: { startedAt: new Date('2026-11-25T15:56:59Z') } };
      assert.deepEqual(what(problem(rerun)), failed);
    });

    it('forgets a failure once the init container completed, and then judges the containers', () => {
      const p = real('Init-CrashLoopBackOff');
      const init = p.status?.initContainerStatuses?.[0];
      if (init) init.state = { terminated: { exitCode: 0, reason: 'Completed' } };
      assert.equal(problem(p), undefined);
      const web = p.status?.containerStatuses?.[0];
      if (web) web.state = { waiting: { reason: 'CreateContainerConfigError', message: 'configmap "x" not found' } };
      assert.deepEqual(what(problem(p)), {
        reason: 'ContainerConfigError',
        status: 'CreateContainerConfigError',
        container: 'web',
        detail: 'configmap "x" not found',
      });
    });

    it('says why a recon8s script gave up (its marked termination message), cut; nothing of any other message', () => {
      const p = real('Init-CrashLoopBackOff');
      const init = p.status?.initContainerStatuses?.[0];
      const ended = (message: string) => {
        if (init) init.lastState = { terminated: { exitCode: 1, reason: 'Error', message } };
        return problem(p)?.detail ?? '';
      };
      assert.equal(
        ended(`${MYSQL_GAVE_UP_PREFIX}/var/lib/mysql/data is not empty but holds no MySQL data dictionary (mysql.ibd)`),
        'exited with code 1 (Error): /var/lib/mysql/data is not empty but holds no MySQL data dictionary (mysql.ibd)',
      );
      const long = ended(`${MYSQL_GAVE_UP_PREFIX}${'x'.repeat(1000)}`);
      assert.ok(long.length === 300 && long.endsWith('x…'), long);
      assert.equal(ended('password=hunter2\nsomething went wrong'), 'exited with code 1 (Error)');
    });

    it('judges a sidecar (restartPolicy Always) like a container: no Init: prefix', () => {
      const p = pod('web-1', { state: { running: { startedAt: new Date('2026-11-25T15:50:00Z') } }, ready: true });
      p.spec = {
        containers: p.spec?.containers ?? [],
        initContainers: [{ name: 'proxy', image: 'p', restartPolicy: 'Always' }],
      };
      p.status = {
        ...p.status,
        initContainerStatuses: [
          {
            name: 'proxy',
            image: 'p',
            imageID: '',
            ready: false,
            restartCount: 4,
            state: {
              waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container=proxy' },
            },
            lastState: { terminated: { exitCode: 1, reason: 'Error' } },
          },
        ],
      };
      assert.deepEqual(what(problem(p)), {
        reason: 'CrashLoopBackOff',
        status: 'CrashLoopBackOff',
        container: 'proxy',
        detail: 'exited with code 1 (Error)',
      });
    });
  });

  describe('containers', () => {
    it('names the missing Secret of a CreateContainerConfigError', () => {
      assert.deepEqual(what(problem(real('CreateContainerConfigError'))), {
        reason: 'ContainerConfigError',
        status: 'CreateContainerConfigError',
        container: 'web',
        detail: 'secret "missing-secret" not found',
      });
    });

    it('reports a crash loop the same way through every state of it: exited, backing off, running again', () => {
      const looping = {
        reason: 'CrashLoopBackOff',
        status: 'CrashLoopBackOff',
        container: 'web',
        detail: 'exited with code 3 (Error)',
      };
      assert.deepEqual(what(problem(real('Crash-Error'))), looping);
      assert.deepEqual(what(problem(real('CrashLoopBackOff'))), looping);
      // Running (and ready: no readiness probe) between two crashes: 3 s after it started again.
      const rerun = problem(real('Crash-running-after-error'));
      assert.deepEqual(what(rerun), looping);
      assert.equal(rerun?.recheckInMs, CRASH_WINDOW_MS - 3_000);
    });

    it("never repeats a container's termination message (its own output may hold anything)", () => {
      for (const key of ['Crash-Error', 'CrashLoopBackOff', 'Crash-running-after-error'])
        assert.doesNotMatch(JSON.stringify(problem(real(key))), /secret-ish/, key);
    });

    it('lets a container that stays up after a crash recover: no problem once it ran for the crash window', () => {
      const p = real('Crash-running-after-error');
      const started = new Date('2026-11-25T15:56:57Z').getTime();
      assert.ok(problem(p, new Date(started + CRASH_WINDOW_MS - 1)));
      assert.equal(problem(p, new Date(started + CRASH_WINDOW_MS)), undefined);
    });

    it('takes one exit after a long run (a kill, an OOM after days) for no loop, beyond the back-off the kubelet reports', () => {
      const days = {
        exitCode: 137,
        reason: 'Error',
        startedAt: new Date('2026-11-20T00:00:00Z'),
        finishedAt: new Date('2026-11-25T15:56:50Z'),
      };
      assert.equal(problem(pod('db-0', { restartCount: 3, state: { terminated: days } })), undefined);
      const again = { running: { startedAt: new Date('2026-11-25T15:56:55Z') } };
      assert.equal(
        problem(pod('db-0', { restartCount: 4, ready: true, state: again, lastState: { terminated: days } })),
        undefined,
      );
      // The kubelet's own back-off after it is still reported while it lasts.
      assert.equal(
        problem(
          pod('db-0', {
            restartCount: 4,
            state: { waiting: { reason: 'CrashLoopBackOff' } },
            lastState: { terminated: days },
          }),
        )?.reason,
        'CrashLoopBackOff',
      );
    });

    it('takes a first restart after a short run for no loop yet, a second for one', () => {
      const short = {
        exitCode: 1,
        reason: 'Error',
        startedAt: new Date('2026-11-25T15:56:40Z'),
        finishedAt: new Date('2026-11-25T15:56:41Z'),
      };
      const running = { running: { startedAt: new Date('2026-11-25T15:56:45Z') } };
      assert.equal(
        problem(pod('web-1', { restartCount: 1, state: running, lastState: { terminated: short } })),
        undefined,
      );
      assert.equal(
        problem(pod('web-1', { restartCount: 2, state: running, lastState: { terminated: short } }))?.reason,
        'CrashLoopBackOff',
      );
    });

    it('names an OOM kill', () => {
      const p = pod('web-1', {
        restartCount: 3,
        state: { waiting: { reason: 'CrashLoopBackOff' } },
        lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } },
      });
      assert.equal(problem(p)?.detail, 'exited with code 137 (OOMKilled)');
    });

    it('reports a container the runtime cannot create or run (CreateContainerError, RunContainerError)', () => {
      for (const reason of ['CreateContainerError', 'RunContainerError'])
        assert.deepEqual(
          what(problem(pod('web-1', { state: { waiting: { reason, message: 'exec: "nope": not found' } } }))),
          { reason: 'ContainerStartFailed', status: reason, container: 'web', detail: 'exec: "nope": not found' },
        );
    });

    it('takes ContainerCreating, PodInitializing and a running container for no problem', () => {
      assert.equal(problem(real('Running')), undefined);
      for (const reason of ['ContainerCreating', 'PodInitializing'])
        assert.equal(problem(pod('web-1', { state: { waiting: { reason } } })), undefined, reason);
      // Restarted long ago after a crash, up since: recovered.
      assert.equal(
        problem(
          pod('web-1', {
            restartCount: 1,
            ready: true,
            state: { running: { startedAt: new Date('2026-11-20T00:00:00Z') } },
            lastState: { terminated: { exitCode: 1, reason: 'Error' } },
          }),
        ),
        undefined,
      );
    });

    it('looks at no pod that is being deleted or has finished (evicted, a job done)', () => {
      const broken = { state: { waiting: { reason: 'ImagePullBackOff' } } };
      assert.ok(problem(pod('web-1', broken)));
      assert.equal(problem(pod('web-1', broken, { deleting: true })), undefined);
      for (const phase of ['Failed', 'Succeeded'])
        assert.equal(problem(pod('web-1', broken, { status: { phase } })), undefined, phase);
    });
  });

  describe('several pods', () => {
    const pulls = ['web-c', 'web-a', 'web-b'].map((n) =>
      pod(n, {
        state: {
          waiting: {
            reason: 'ErrImageNeverPull',
            message: 'Container image "x" is not present with pull policy of Never',
          },
        },
      }),
    );
    const pending = pod(
      'web-z',
      {},
      {
        status: {
          phase: 'Pending',
          conditions: [
            {
              type: 'PodScheduled',
              status: 'False',
              reason: 'Unschedulable',
              message: '0/1 nodes are available: 1 Insufficient cpu. preemption: …',
            },
          ],
          containerStatuses: [],
        },
      },
    );

    it('orders them by reason (scheduling before pulls before crashes), then by pod', () => {
      const found = podProblems([...pulls, real('CrashLoopBackOff'), pending, real('Running')], NOW);
      assert.deepEqual(
        found.map((p) => `${p.reason}/${p.pod}`),
        [
          'PodUnschedulable/web-z',
          'ImagePullFailed/web-a',
          'ImagePullFailed/web-b',
          'ImagePullFailed/web-c',
          'CrashLoopBackOff/crash',
        ],
      );
    });

    it('says one thing per reason, pods with the same problem on one line', () => {
      assert.deepEqual(summarizePodProblems(podProblems([...pulls, pending], NOW)), [
        {
          reason: 'PodUnschedulable',
          message: 'pod web-z: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.',
        },
        {
          reason: 'ImagePullFailed',
          message:
            'pods web-a, web-b, web-c: ErrImageNeverPull (container web): Container image "x" is not present with pull policy of Never',
        },
      ]);
    });

    it('names at most five pods per line', () => {
      const many = Array.from({ length: 7 }, (_, i) =>
        pod(`web-${i}`, { state: { waiting: { reason: 'ImagePullBackOff' } } }),
      );
      assert.match(
        summarizePodProblems(podProblems(many, NOW))[0]?.message ?? '',
        /^pods web-0, web-1, web-2, web-3, web-4 and 2 more: ImagePullBackOff \(container web\): image "recon8s.test\/web:1" cannot be pulled$/,
      );
    });

    it('gives each pod problem one Event key, the same through retries and back-offs', () => {
      const [retry] = podProblemEvents(podProblems([real('ErrImagePull')], NOW));
      const [backoff] = podProblemEvents(podProblems([real('ImagePullBackOff')], NOW));
      assert.deepEqual(retry, backoff);
      assert.equal(retry?.key, `pod-problem/${real('ErrImagePull').metadata?.uid}/web/ImagePullFailed`);
      assert.match(retry?.message ?? '', /^pod pull-ifnotpresent: ImagePullBackOff \(container web\): failed to pull/);
      assert.deepEqual(summarizePodProblems([]), []);
    });

    it('asks to be looked at again only for a problem that ends by itself', () => {
      assert.equal(podRecheckAfterMs(podProblems([...pulls, real('CrashLoopBackOff')], NOW)), undefined);
      assert.equal(podRecheckAfterMs(podProblems([real('Crash-running-after-error')], NOW)), CRASH_WINDOW_MS - 3_000);
    });
  });

  describe('what a pod that is not running yet is doing', () => {
    it('says it as kubectl does', () => {
      assert.equal(podProgress(real('Unschedulable-cpu')), 'Pending');
      assert.equal(podProgress(real('Init-running-first')), 'Init:0/1');
      assert.equal(podProgress(real('CreateContainerConfigError')), 'CreateContainerConfigError');
      assert.equal(podProgress(real('Running')), undefined);
      assert.equal(podProgress(pod('web-1', { state: { waiting: { reason: 'PodInitializing' } } })), 'PodInitializing');
      assert.equal(podProgress(pod('web-1', {}, { status: { containerStatuses: [] } })), 'ContainerCreating');
      assert.equal(podProgress(pod('web-1', {}, { deleting: true })), 'Terminating');
    });

    it("explains a member that does not answer by its pod, not by the connection's error", () => {
      assert.match(
        podNote(real('Init-ImagePullBackOff'), NOW) ?? '',
        /^Init:ImagePullBackOff: failed to pull and unpack image "recon8s.test\/mysql:does-not-exist"/,
      );
      assert.equal(
        podNote(real('Unschedulable-cpu'), NOW),
        'Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.',
      );
      assert.equal(podNote(real('Init-running-first'), NOW), 'Init:0/1: the pod is not running yet');
      assert.equal(podNote(pod('web-1', {}, { deleting: true }), NOW), 'Terminating: the pod is being deleted');
      // Running: the connection error says more than the pod.
      assert.equal(podNote(real('Running'), NOW), undefined);
      assert.equal(podNote(undefined, NOW), undefined);
    });
  });
});
