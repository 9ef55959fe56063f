import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiException,
  AuthenticationV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  VersionApi,
  Watch,
} from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { KUBE_VERSION, startControlPlane } from '../controlplane/index.js';
import type { ControlPlane } from '../controlplane/index.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';

/** The HTTP status of an API call: 200 when it succeeds, the ApiException's code when it fails. */
async function statusOf(call: () => Promise<unknown>): Promise<number> {
  try {
    await call();
    return 200;
  } catch (error) {
    if (error instanceof ApiException) return error.code;
    throw error;
  }
}

async function whoAmI(kubeConfig: KubeConfig): Promise<{ username?: string; groups?: string[] }> {
  const review = await kubeConfig.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return review.status?.userInfo ?? {};
}

/** Every process whose command line mentions `dir`: after stop() there must be none. */
function processesMentioning(dir: string): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .flatMap((pid) => {
      try {
        const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
        return commandLine.includes(dir) ? [`${pid}: ${commandLine.slice(0, 120)}`] : [];
      } catch {
        return [];
      }
    });
}

describe('test control plane (shared)', () => {
  const controlPlane = useSharedControlPlane();
  let core: CoreV1Api;

  before(() => {
    core = controlPlane().kubeConfig().makeApiClient(CoreV1Api);
  });

  it('answers /readyz over TLS and serves the pinned Kubernetes version', async () => {
    const admin = controlPlane().kubeConfig();
    assert.equal(admin.getCurrentCluster()?.server, controlPlane().server);
    const options: RequestOptions = {};
    await admin.applyToHTTPSOptions(options);
    const readyz = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(`${controlPlane().server}/readyz`, options, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.deepEqual(readyz, { status: 200, body: 'ok' });
    const version = await admin.makeApiClient(VersionApi).getCode();
    assert.equal(version.gitVersion, KUBE_VERSION);
  });

  it('authenticates the admin kubeconfig as a member of system:masters', async () => {
    const me = await whoAmI(controlPlane().kubeConfig());
    assert.ok(me.groups?.includes('system:masters'), `groups: ${String(me.groups)}`);
  });

  it('applies RBAC to minted identities: 403 until a RoleBinding, then only in its namespace', async () => {
    const namespace = await freshNamespace('rbac');
    const elsewhere = await freshNamespace('rbac-elsewhere');
    // A user name of its own: other test files share this control plane and may bind other users.
    const user = `jane-${namespace}`;
    const jane = await controlPlane().mintCredentials({ user, groups: ['recon8s:testers'] });
    const me = await whoAmI(jane.kubeConfig());
    assert.equal(me.username, user);
    assert.ok(me.groups?.includes('recon8s:testers'), `groups: ${String(me.groups)}`);

    const janeCore = jane.kubeConfig().makeApiClient(CoreV1Api);
    assert.equal(await statusOf(() => janeCore.listNamespacedSecret({ namespace })), 403);

    const rbac = controlPlane().kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'secret-lister' },
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'jane-lists-secrets' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'secret-lister' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
    // The authorizer reads RBAC objects from an informer: the binding takes effect a moment later.
    await eventually(
      async () => assert.equal(await statusOf(() => janeCore.listNamespacedSecret({ namespace })), 200),
      {
        description: 'the RoleBinding to let jane list secrets',
      },
    );
    assert.equal(await statusOf(() => janeCore.listNamespacedSecret({ namespace: elsewhere })), 403);
  });

  it('collects garbage: deleting an owner deletes its dependents', async () => {
    const namespace = await freshNamespace('gc');
    const owner = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'owner' } } });
    const uid = owner.metadata?.uid;
    assert.ok(uid);
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: 'dependent', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid }] },
      },
    });
    await core.deleteNamespacedConfigMap({ namespace, name: 'owner' });
    await eventually(
      async () =>
        assert.equal(await statusOf(() => core.readNamespacedConfigMap({ namespace, name: 'dependent' })), 404),
      { description: 'the garbage collector to delete the dependent ConfigMap' },
    );
  });

  it('finishes deleting a namespace and its contents', async () => {
    const namespace = await freshNamespace('doomed');
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'content' } } });
    await core.deleteNamespace({ name: namespace });
    await eventually(async () => assert.equal(await statusOf(() => core.readNamespace({ name: namespace })), 404), {
      description: `namespace ${namespace} to be gone`,
    });
  });

  it('gives each namespace its default ServiceAccount and kube-root-ca.crt', async () => {
    const namespace = await freshNamespace('defaults');
    await eventually(() => core.readNamespacedServiceAccount({ namespace, name: 'default' }), {
      description: 'the default ServiceAccount',
    });
    await eventually(() => core.readNamespacedConfigMap({ namespace, name: 'kube-root-ca.crt' }), {
      description: 'the kube-root-ca.crt ConfigMap',
    });
  });

  it('authenticates a ServiceAccount kubeconfig (TokenRequest) as system:serviceaccount:<ns>:<name>', async () => {
    const namespace = await freshNamespace('sa');
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'robot' } } });
    const robot = await controlPlane().serviceAccountKubeConfig(namespace, 'robot');
    assert.equal(robot.user, `system:serviceaccount:${namespace}:robot`);
    const me = await whoAmI(robot.kubeConfig());
    assert.equal(me.username, `system:serviceaccount:${namespace}:robot`);
    assert.ok(me.groups?.includes(`system:serviceaccounts:${namespace}`), `groups: ${String(me.groups)}`);
  });

  it('names a missing ServiceAccount instead of failing with a bare 404', async () => {
    const namespace = await freshNamespace('sa-missing');
    await assert.rejects(
      controlPlane().serviceAccountKubeConfig(namespace, 'ghost'),
      /ServiceAccount .*\/ghost does not exist/,
    );
  });

  it('enforces Pod Security admission on labelled namespaces', async () => {
    const namespace = await freshNamespace('restricted', {
      labels: { 'pod-security.kubernetes.io/enforce': 'restricted' },
    });
    // The ServiceAccount admission plugin rejects pods until the namespace's default ServiceAccount exists.
    await eventually(() => core.readNamespacedServiceAccount({ namespace, name: 'default' }));
    const privileged = {
      metadata: { name: 'privileged' },
      spec: { containers: [{ name: 'main', image: 'busybox', securityContext: { privileged: true } }] },
    };
    const rejection = await core.createNamespacedPod({ namespace, body: privileged, dryRun: 'All' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(rejection instanceof ApiException, 'expected the privileged pod to be rejected');
    assert.equal(rejection.code, 403);
    const status = JSON.parse(String(rejection.body)) as { message?: string };
    assert.match(status.message ?? '', /violates PodSecurity "restricted:latest": privileged/);
  });
});

describe('test control plane (own instance)', () => {
  let controlPlane: ControlPlane | undefined;

  before(async function (this: Mocha.Context) {
    this.timeout(120_000);
    controlPlane = await startControlPlane({ controllers: ['garbagecollector'] });
  });

  after(async () => {
    await controlPlane?.stop();
  });

  it('restarts kube-apiserver on the same port, after which an old watch resourceVersion is 410 Gone', async function (this: Mocha.Context) {
    this.timeout(60_000);
    const cp = controlPlane;
    assert.ok(cp);
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    const first = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'before-compaction' } },
    });
    const oldVersion = first.metadata?.resourceVersion;
    assert.ok(oldVersion);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'after-it' } } });
    const server = cp.server;

    const revision = await cp.compactEtcd();
    assert.ok(revision > Number(oldVersion), `compacted at ${revision}, old resourceVersion ${oldVersion}`);
    await cp.restartApiServer();
    assert.equal(cp.server, server);

    const watching = new AbortController();
    const code = await new Promise<number | undefined>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no watch event within 10 s')), 10_000);
      watching.signal.addEventListener('abort', () => clearTimeout(timer));
      new Watch(cp.kubeConfig())
        .watch(
          '/api/v1/namespaces/default/configmaps',
          { resourceVersion: oldVersion },
          (type, object: { code?: number }) => {
            if (type === 'ERROR') resolve(object.code);
            else reject(new Error(`expected an ERROR event, got ${type}`));
          },
          (error: unknown) => (error ? reject(error as Error) : resolve(undefined)),
        )
        .then((request) => {
          if (watching.signal.aborted) request.abort();
          else watching.signal.addEventListener('abort', () => request.abort());
        }, reject);
    }).finally(() => watching.abort());
    assert.equal(code, 410);
    assert.equal(await statusOf(() => core.listNamespacedConfigMap({ namespace: 'default' })), 200);
  });

  it('stop() leaves no process and no directory behind, and can be called again', async function (this: Mocha.Context) {
    this.timeout(60_000);
    const cp = controlPlane;
    assert.ok(cp);
    const pids = cp.pids();
    const tails = Object.entries(cp.logs)
      .map(
        ([name, file]) =>
          `--- ${name}:\n${file && existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-8).join('\n') : '(no log)'}`,
      )
      .join('\n');
    assert.equal(
      pids.length,
      3,
      `etcd, kube-apiserver and kube-controller-manager running; the ends of their logs:\n${tails}`,
    );
    await cp.stop();
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, `pid ${pid} still exists`);
    assert.deepEqual(processesMentioning(cp.dir), []);
    assert.equal(existsSync(cp.dir), false);
    await cp.stop();
    assert.deepEqual(cp.pids(), []);
  });

  it('fails a start whose component exits, quoting the end of its log, and leaves nothing behind', async function (this: Mocha.Context) {
    this.timeout(60_000);
    let dir: string | undefined;
    await assert.rejects(startControlPlane({ apiServerArgs: ['--no-such-flag=1'] }), (error: Error) => {
      assert.match(
        error.message,
        /kube-apiserver \(pid \d+\) exited with code 1 while waiting for kube-apiserver \/readyz/,
      );
      assert.match(error.message, /unknown flag: --no-such-flag/);
      dir = /Last lines of (\S+)\/kube-apiserver\.log/.exec(error.message)?.[1];
      return true;
    });
    assert.ok(dir, 'the message names the log file');
    assert.deepEqual(processesMentioning(dir), []);
    assert.equal(existsSync(dir), false);
  });

  it('says which binaries are missing from RECON8S_ASSETS', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'recon8s-empty-assets-'));
    try {
      await assert.rejects(
        startControlPlane({ assetsDir: empty }),
        /lacks executable etcd, kube-apiserver, kube-controller-manager, kubectl/,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
