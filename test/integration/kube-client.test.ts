import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { ApiextensionsV1Api, KubeConfig } from '@kubernetes/client-node';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { HttpMethod, createKubeClient } from '../../lib/kube/index.js';
import { apiError, isNotFound } from '../../lib/kube/index.js';
import type { KubeClient, RequestEvent } from '../../lib/kube/index.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';

/**
 * TCP connections of THIS process to `port` that are ESTABLISHED now, identified by local address:port.
 * Read from the kernel (/proc/self/fd socket inodes joined with /proc/net/tcp{,6}), not from undici, so
 * it counts what the client really opened, whichever layer opened it.
 */
function establishedTo(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m?.[1] !== undefined) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const out = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      const [local, remote, state, inode] = [f[1], f[2], f[3], f[9]];
      if (local === undefined || remote === undefined || inode === undefined) continue;
      if (state === '01' && parseInt(remote.split(':')[1] ?? '', 16) === port && inodes.has(inode)) out.add(local);
    }
  }
  return out;
}

/** Runs `n` calls one after the other and returns how many distinct new connections to `port` appeared. */
async function connectionsUsedBy(port: number, n: number, call: () => Promise<unknown>): Promise<number> {
  const before = establishedTo(port);
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    await call();
    for (const c of establishedTo(port)) if (!before.has(c)) seen.add(c);
  }
  return seen.size;
}

describe('kube client (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let namespace: string;
  let port: number;
  const requests: RequestEvent[] = [];
  let client: KubeClient;

  before(async () => {
    namespace = await freshNamespace('kube-client');
    port = Number(new URL(controlPlane().server).port);
    client = createKubeClient({
      kubeconfigPath: controlPlane().kubeconfigPath,
      hooks: { onRequest: (e) => requests.push(e) },
    });
  });
  after(async () => {
    await client.close();
  });

  it('sends every request over one pinned connection (counted by the kernel, and by the pool)', async function () {
    // The kernel's count comes from /proc/net/tcp: Linux only. CI runs on Linux, where it must never skip.
    if (process.platform !== 'linux') {
      if (process.env.CI === 'true') throw new Error(`CI (CI=true) on ${process.platform}: this check needs Linux`);
      this.skip();
    }
    const statsBefore = client.connectionStats();
    const used = await connectionsUsedBy(port, 25, async () => {
      await client.requestJson({ path: `/api/v1/namespaces/${namespace}/configmaps` });
      await client.requestJson({ path: `/api/v1/namespaces/${namespace}` });
      await client.request({ path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases` });
      await client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pinned', namespace } });
    });
    assert.ok(used <= 1, `100 sequential requests used ${used} new connections`);
    const stats = client.connectionStats();
    assert.equal(stats.pools, 1);
    assert.ok(stats.opened - statsBefore.opened <= 1, `pool opened ${stats.opened - statsBefore.opened} connections`);
    assert.ok(stats.opened >= 1);
  });

  it('reports every request with method, path, status code and host; "<error>" when no response came', async () => {
    requests.length = 0;
    const host = new URL(controlPlane().server).host;
    const configMaps = `/api/v1/namespaces/${namespace}/configmaps`;
    const create = (): Promise<unknown> =>
      client.request({
        method: HttpMethod.POST,
        path: configMaps,
        body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'counted' } }),
        headers: { 'Content-Type': 'application/json' },
      });
    await client.request({ path: `/api/v1/namespaces/${namespace}` });
    await client.request({ path: `${configMaps}/absent` }).catch(() => undefined);
    await create();
    await create().catch(() => undefined);
    await client.request({ method: HttpMethod.DELETE, path: `${configMaps}/counted` });
    assert.deepEqual(
      requests.map((r) => `${r.method} ${r.path} ${r.code}`),
      [
        `GET /api/v1/namespaces/${namespace} 200`,
        `GET ${configMaps}/absent 404`,
        `POST ${configMaps} 201`,
        `POST ${configMaps} 409`,
        `DELETE ${configMaps}/counted 200`,
      ],
    );
    assert.ok(requests.every((r) => r.host === host && r.durationMs >= 0));

    // A server that is not there: no HTTP status at all.
    const closedPort = await new Promise<number>((resolve) => {
      const srv = createServer();
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const kc = new KubeConfig();
    kc.loadFromFile(controlPlane().kubeconfigPath);
    const cluster = kc.getCurrentCluster();
    assert.ok(cluster);
    const failing: RequestEvent[] = [];
    const down = createKubeClient({
      kubeConfig: (() => {
        const copy = new KubeConfig();
        copy.loadFromOptions({
          clusters: [{ ...cluster, server: `https://127.0.0.1:${closedPort}` }],
          users: kc.getUsers(),
          contexts: kc.getContexts(),
          currentContext: kc.getCurrentContext(),
        });
        return copy;
      })(),
      hooks: { onRequest: (e) => failing.push(e) },
    });
    const error = await down.request({ path: '/api/v1/namespaces/default' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error);
    assert.equal(apiError(error).code, 0);
    assert.match(apiError(error).message, /ECONNREFUSED/);
    assert.deepEqual(
      failing.map((r) => `${r.method} ${r.code}`),
      ['GET <error>'],
    );
    await down.close();
  });

  it('apply(): server-side apply as field manager recon8s, without mutating the object passed', async () => {
    const desired: V1ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'applied', namespace },
      data: { a: '1' },
    };
    const frozen = structuredClone(desired);
    const live = await client.apply(desired);
    assert.deepEqual(desired, frozen, 'the object passed is unchanged');
    assert.equal(live.data?.a, '1');
    assert.ok(live.metadata?.managedFields?.some((f) => f.manager === 'recon8s' && f.operation === 'Apply'));
    const dry = await client.apply({ ...desired, data: { a: '2' } }, { dryRun: true });
    assert.equal(dry.data?.a, '2');
    assert.equal(
      (await client.requestJson<V1ConfigMap>({ path: `/api/v1/namespaces/${namespace}/configmaps/applied` })).data?.a,
      '1',
    );
  });

  it('apiError(): code, reason, message and causes of a server-side apply conflict', async () => {
    const someoneElse = createKubeClient({
      kubeconfigPath: controlPlane().kubeconfigPath,
      fieldManager: 'someone-else',
    });
    await someoneElse.apply({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'contested', namespace },
      data: { owned: 'by-someone-else' },
    });
    await someoneElse.close();
    const error = await client
      .apply(
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'contested', namespace }, data: { owned: 'by-us' } },
        { force: false },
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const info = apiError(error);
    assert.equal(info.code, 409);
    assert.equal(info.reason, 'Conflict');
    assert.match(info.message, /conflict/i);
    assert.deepEqual(
      info.causes.map((c) => [c.reason, c.field]),
      [['FieldManagerConflict', '.data.owned']],
    );

    const missing = await client.request({ path: `/api/v1/namespaces/${namespace}/configmaps/nope` }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.equal(isNotFound(missing), true);
    assert.equal(apiError(missing).reason, 'NotFound');
  });

  it('applyStatus(): server-side apply through the /status subresource of a custom resource', async () => {
    const group = 'kubeclienttest.recon8s.dev';
    const ext = controlPlane().kubeConfig().makeApiClient(ApiextensionsV1Api);
    await ext
      .createCustomResourceDefinition({
        body: {
          metadata: { name: `gadgets.${group}` },
          spec: {
            group,
            scope: 'Namespaced',
            names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
            versions: [
              {
                name: 'v1',
                served: true,
                storage: true,
                subresources: { status: {} },
                schema: {
                  openAPIV3Schema: {
                    type: 'object',
                    properties: {
                      spec: { type: 'object', properties: { size: { type: 'integer' } } },
                      status: {
                        type: 'object',
                        properties: { observedGeneration: { type: 'integer' }, phase: { type: 'string' } },
                      },
                    },
                  },
                },
              },
            ],
          },
        },
      })
      .catch((e: unknown) => {
        if (apiError(e).code !== 409) throw e;
      });
    const cr = { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g1', namespace }, spec: { size: 3 } };
    await eventually(() => client.apply(cr), { description: 'the Gadget CRD to be served' });
    await client.applyStatus({ ...cr, plural: 'gadgets', status: { observedGeneration: 1, phase: 'Ready' } });
    const live = await client.requestJson<{
      spec: { size: number };
      status: { phase: string };
      metadata: { managedFields: { manager: string; subresource?: string }[] };
    }>({
      path: `/apis/${group}/v1/namespaces/${namespace}/gadgets/g1`,
    });
    assert.equal(live.status.phase, 'Ready');
    assert.equal(live.spec.size, 3);
    assert.ok(live.metadata.managedFields.some((f) => f.manager === 'recon8s' && f.subresource === 'status'));
  });

  it('authenticates through an exec credential plugin, and runs it again after a 401', async () => {
    // A ServiceAccount's bound token, which the plugin hands out from its second run on.
    const sa = 'exec-plugin';
    await client.request({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa } }),
      headers: { 'Content-Type': 'application/json' },
    });
    const token = (await controlPlane().serviceAccountKubeConfig(namespace, sa)).kubeConfig().getCurrentUser()?.token;
    assert.ok(token);
    const dir = mkdtempSync(join(tmpdir(), 'recon8s-exec-'));
    try {
      const admin = controlPlane().kubeConfig().getCurrentCluster();
      assert.ok(admin?.caData);
      writeFileSync(join(dir, 'ca.crt'), Buffer.from(admin.caData, 'base64'));
      writeFileSync(join(dir, 'token'), token, { mode: 0o600 });
      // First run: a token the API server rejects. Later runs: the real one. Each run is counted.
      writeFileSync(
        join(dir, 'plugin.sh'),
        `#!/bin/sh
set -eu
here=$(dirname "$0")
echo run >> "$here/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$here/exec-info"
if [ "$(wc -l < "$here/runs")" -eq 1 ]; then t=not-a-token; else t=$(cat "$here/token"); fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$t"
`,
      );
      chmodSync(join(dir, 'plugin.sh'), 0o755);
      // A relative path: the CA file is found next to the kubeconfig.
      writeFileSync(
        join(dir, 'kubeconfig'),
        `apiVersion: v1
kind: Config
current-context: exec
clusters: [{ name: c, cluster: { server: "${controlPlane().server}", certificate-authority: ca.crt } }]
users: [{ name: u, user: { exec: { apiVersion: client.authentication.k8s.io/v1, command: ${join(dir, 'plugin.sh')}, interactiveMode: Never } } }]
contexts: [{ name: exec, context: { cluster: c, user: u, namespace: ${namespace} } }]
`,
      );
      const viaPlugin = createKubeClient({ kubeconfigPath: join(dir, 'kubeconfig') });
      assert.equal(viaPlugin.namespace, namespace);
      const whoAmI = (): Promise<{ status?: { userInfo?: { username?: string } } }> =>
        viaPlugin.requestJson({
          method: HttpMethod.POST,
          path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
          body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
          headers: { 'Content-Type': 'application/json' },
        });
      const rejected = await whoAmI().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.equal(apiError(rejected).code, 401);
      assert.equal((await whoAmI()).status?.userInfo?.username, `system:serviceaccount:${namespace}:${sa}`);
      await whoAmI();
      const runs = readFileSync(join(dir, 'runs'), 'utf8').trim().split('\n');
      assert.equal(runs.length, 2, 'once for the rejected token, once after the 401; then cached');
      assert.deepEqual(JSON.parse(readFileSync(join(dir, 'exec-info'), 'utf8')), {
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        spec: { interactive: false },
      });
      await viaPlugin.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
