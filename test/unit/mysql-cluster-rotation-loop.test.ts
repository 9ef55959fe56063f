// The rotation of a MySQLCluster's own accounts as its manager runs it (cluster-rotation-loop.ts): what it
// reads of the resource, its pods and the Secret, what it writes, and that its status is never dropped
// while a pass is still under way.
import assert from 'node:assert/strict';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { KubeClient } from '../../lib/kube/index.js';
import { KubeApiError } from '../../lib/kube/errors.js';
import { silentLogger } from '../../lib/observability/logger.js';
import type { ClusterAccountActions, ObservedClusterAccount } from '../../lib/mysql/cluster-account-sql.js';
import { clusterFingerprint } from '../../lib/mysql/cluster-account-sql.js';
import type { ClusterAccount } from '../../lib/mysql/credential-rotation.js';
import { CLUSTER_ACCOUNTS } from '../../lib/mysql/credential-rotation.js';
import { createClusterRotation } from '../../lib/controller/mysql-cluster/credential-rotation-loop.js';
import type { CustomResource, ManageContext } from '../../lib/controller/kind-controller.js';
import type { MySQLClusterFacts } from '../../lib/controller/mysql-cluster/facts.js';
import { mergeSecret } from './support/merge-secret.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

const cluster = (annotation?: string, spec: Record<string, unknown> = {}, status?: Record<string, unknown>) =>
  ({
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'MySQLCluster',
    metadata: {
      name: 'db',
      namespace: 'shop',
      uid: 'db-uid',
      ...(annotation ? { annotations: { 'recon8s.dev/rotate-credentials': annotation } } : {}),
    },
    spec,
    ...(status ? { status } : {}),
  }) as CustomResource;

const member = (name: string, ip: string, bootstrapping = false): V1Pod => ({
  metadata: { name, labels: { 'app.kubernetes.io/component': 'database', 'app.kubernetes.io/instance': 'db' } },
  status: {
    podIP: ip,
    ...(bootstrapping ? { initContainerStatuses: [{ name: 'bootstrap', state: { running: {} } }] } : {}),
  } as V1Pod['status'],
});

/** The credentials Secret recon8s generated, and a client that patches it (compare-and-swap). */
function fakeApi(generatedFor = 'db') {
  const patches: unknown[] = [];
  let secret: V1Secret = {
    metadata: {
      name: 'db-credentials',
      namespace: 'shop',
      resourceVersion: '7',
      labels: { 'recon8s.dev/generated-for': generatedFor },
    },
    data: { 'root-password': b64('root-0'), 'replication-password': b64('repl-0'), 'admin-password': b64('admin-0') },
  };
  const client = {
    requestJson: (req: { method?: string; path: string; body?: string }) => {
      if (req.method !== 'PATCH') return Promise.resolve(secret);
      const body = JSON.parse(req.body ?? '{}') as {
        metadata: { resourceVersion?: string; annotations?: Record<string, string | null> };
        data?: Record<string, string | null>;
      };
      patches.push(body);
      if (body.metadata.resourceVersion !== secret.metadata?.resourceVersion)
        return Promise.reject(new KubeApiError(409, 'HTTP 409: conflict', '{}', {}));
      secret = mergeSecret(secret, body);
      return Promise.resolve(secret);
    },
  } as unknown as KubeClient;
  return { client, patches, secret: () => secret };
}

const ctx = (cr: CustomResource, client: KubeClient, pods: V1Pod[]): ManageContext<MySQLClusterFacts> =>
  ({
    client,
    cr,
    live: () => undefined,
    pods,
    prepared: {
      problems: [],
      facts: {
        credentialsSecretName: 'db-credentials',
        tlsSecretName: 'db-tls',
        tls: { caPem: 'a CA (the fake sessions verify nothing)', notAfter: '2099-01-01T00:00:00.000Z' },
      },
    },
    log: silentLogger,
  }) as ManageContext<MySQLClusterFacts>;

/** Members whose accounts record what is set (by fingerprint); records the hosts opened and the statements. */
function fakeMembers() {
  const opened: string[] = [];
  const statements: string[] = [];
  const accounts: Record<ClusterAccount, ObservedClusterAccount> = {
    root: { exists: true, retains: false },
    replication: { exists: true, retains: false },
    admin: { exists: true, retains: false },
    clone: { exists: true, retains: false },
    backup: { exists: true, retains: false },
  };
  const session = (host: string): ClusterAccountActions => ({
    takesWrites: () => Promise.resolve(host === '10.0.0.10'),
    observe: () => Promise.resolve(structuredClone(accounts)),
    setPassword: (p) => {
      statements.push(`set ${p.account} retain=${String(p.retain)}`);
      accounts[p.account] = { exists: true, fingerprint: clusterFingerprint(p.account, p.password), retains: p.retain };
      return Promise.resolve();
    },
    discardOldPasswords: () => Promise.resolve(),
    channel: () => Promise.resolve({ password: 'none', receiver: 'OFF', applier: 'OFF' }),
    repoint: () => Promise.resolve(),
    close: () => Promise.resolve(),
  });
  return {
    opened,
    statements,
    open: (o: { host: string }) => (opened.push(o.host), Promise.resolve(session(o.host))),
  };
}

describe('MySQLCluster: the rotation of its own accounts, as the manager runs it', () => {
  const pods = [member('db-0', '10.0.0.10'), member('db-1', '10.0.0.11', true)];

  it('takes a request from the annotation ("[<account>,...@]<token>"), on the recorded primary, and reports it in status.credentialRotation', async () => {
    const api = fakeApi();
    const members = fakeMembers();
    const rotation = createClusterRotation({ open: members.open, agentRevision: () => Promise.resolve('0') });
    const r = await rotation.sync(ctx(cluster('admin@T1'), api.client, pods), pods, 'db-0', () => false);
    assert.deepEqual(members.statements, ['set admin retain=true']);
    assert.deepEqual([...new Set(members.opened)], ['10.0.0.10']);
    const data = api.secret().data ?? {};
    assert.equal(Buffer.from(data['credentials-revision'] ?? '', 'base64').toString(), 'T1');
    assert.equal(data['admin-password-next'], undefined);
    assert.notEqual(data['admin-password'], b64('admin-0'));
    assert.equal(data['root-password'], b64('root-0'));
    assert.equal(r.status?.requested, 'T1');
    assert.deepEqual(r.status?.accounts, ['admin']);
    assert.equal(r.status?.phase, 'WaitingForClients');
    assert.equal(r.busy, true);
    assert.deepEqual(
      r.events.map((e) => e.reason),
      ['CredentialsRotationStaged', 'ClusterAccountPasswordRetained', 'CredentialsRotationSwitched'],
    );
  });

  it('keeps saying what the status said while no pass has reported (a status without it would lose `completed`), and does nothing without a request', async () => {
    const api = fakeApi();
    const members = fakeMembers();
    const rotation = createClusterRotation({ open: members.open, agentRevision: () => Promise.resolve('0') });
    const said = { requested: 'T0', completed: 'T0' };
    const r = await rotation.sync(
      ctx(cluster('T0', {}, { credentialRotation: said }), api.client, pods),
      pods,
      'db-0',
      () => false,
    );
    assert.deepEqual(r.status, { requested: 'T0', accounts: [...CLUSTER_ACCOUNTS], completed: 'T0' });
    assert.equal(r.busy, false);
    assert.deepEqual(api.patches, []);
    assert.deepEqual(members.opened, []);
    const none = await rotation.sync(ctx(cluster(), api.client, pods), pods, 'db-0', () => false);
    assert.equal(none.status, undefined);
  });

  it('refuses to rotate a Secret named in spec.credentialsSecretName, or one it did not generate', async () => {
    for (const [spec, generatedFor] of [
      [{ credentialsSecretName: 'db-credentials' }, 'db'],
      [{}, 'someone-else'],
    ] as const) {
      const api = fakeApi(generatedFor);
      const rotation = createClusterRotation({ open: fakeMembers().open, agentRevision: () => Promise.resolve('0') });
      const r = await rotation.sync(ctx(cluster('T1', spec), api.client, pods), pods, 'db-0', () => false);
      assert.equal(r.status?.phase, 'Refused');
      assert.deepEqual(
        r.problems.map((p) => p.reason),
        ['CredentialsRotationRefused'],
      );
      assert.deepEqual(api.patches, []);
    }
  });

  it('says nothing more once the request of a refused rotation is removed (the Degraded reason clears)', async () => {
    const api = fakeApi('someone-else');
    const rotation = createClusterRotation({ open: fakeMembers().open, agentRevision: () => Promise.resolve('0') });
    const refused = await rotation.sync(ctx(cluster('T1'), api.client, pods), pods, 'db-0', () => false);
    assert.equal(refused.status?.phase, 'Refused');
    const after = await rotation.sync(
      ctx(cluster(undefined, {}, { credentialRotation: refused.status }), api.client, pods),
      pods,
      'db-0',
      () => false,
    );
    assert.equal(after.status, undefined);
    assert.deepEqual(after.problems, []);
  });

  it('sends no password to a member before the cluster’s CA is known', async () => {
    const api = fakeApi();
    const members = fakeMembers();
    const rotation = createClusterRotation({ open: members.open, agentRevision: () => Promise.resolve('0') });
    const c = {
      ...ctx(cluster('T1'), api.client, pods),
      prepared: { problems: [] },
    } as ManageContext<MySQLClusterFacts>;
    const r = await rotation.sync(c, pods, 'db-0', () => false);
    assert.deepEqual(members.opened, []);
    assert.deepEqual(api.patches, []);
    assert.equal(r.status, undefined);
  });
});
