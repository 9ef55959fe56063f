import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { CoreV1Api } from '@kubernetes/client-node';
import { eventually } from '../integration/eventually.js';
import { NODE_HOOK_TIMEOUT_MS, freshRestrictedNamespace, useSharedNode } from './cluster.js';

const RESTRICTED = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};
/** An HTTP GET with bash's /dev/tcp (the mysql image has bash; the web image is one static binary). */
const httpGet = (host: string, port: number): string[] => [
  'bash',
  '-c',
  `exec 3<>/dev/tcp/${host}/${port} && printf 'GET / HTTP/1.0\\r\\nHost: ${host}\\r\\n\\r\\n' >&3 && cat <&3`,
];

/**
 * The real node itself: what the other end-to-end tests rely on. Pods run under Pod Security
 * "restricted", the pod network, Services and cluster DNS work, volumes are writable by non-root pods,
 * and the host is left as it was (teardown/node-teardown.test.ts, run after every other end-to-end test).
 */
describe('the real node (kubelet, containerd, CNI, kube-proxy, CoreDNS)', function () {
  this.timeout(180_000);
  const node = useSharedNode();
  let ns: string;
  let core: CoreV1Api;

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    core = node().kubeConfig().makeApiClient(CoreV1Api);
    ns = await freshRestrictedNamespace(node(), 'node');
  });

  const readyPod = (name: string): Promise<void> =>
    eventually(
      async () => {
        const pod = await core.readNamespacedPod({ namespace: ns, name });
        assert.ok(
          pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          `${name}: ${pod.status?.phase} ${JSON.stringify(pod.status?.containerStatuses?.map((c) => c.state))}`,
        );
      },
      { timeoutMs: 120_000, description: `pod ${name} Ready` },
    );

  it('runs a pod under Pod Security "restricted", and refuses one that is not', async () => {
    await node().kubectl(
      ['apply', '-n', ns, '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'web', labels: { app: 'web' } },
            spec: {
              securityContext: { runAsUser: 65532, runAsGroup: 65532 },
              containers: [
                {
                  name: 'web',
                  image: node().images.web,
                  imagePullPolicy: 'Never',
                  ports: [{ containerPort: 8080 }],
                  securityContext: { ...RESTRICTED, readOnlyRootFilesystem: true },
                  readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
                },
              ],
            },
          },
          {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'web' },
            spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
          },
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'client' },
            spec: {
              securityContext: { runAsUser: 999, runAsGroup: 999 },
              terminationGracePeriodSeconds: 0,
              containers: [
                {
                  name: 'client',
                  image: node().images.mysql,
                  imagePullPolicy: 'Never',
                  command: ['sleep', 'infinity'],
                  securityContext: RESTRICTED,
                },
              ],
            },
          },
        ],
      }),
    );
    await readyPod('web');
    await readyPod('client');
    // No security context at all: what a chart without hardening would send.
    const unhardened = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'plain' },
      spec: { containers: [{ name: 'c', image: node().images.web }] },
    };
    await assert.rejects(
      node().kubectl(['apply', '-n', ns, '-f', '-'], JSON.stringify(unhardened)),
      /violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/,
    );
  });

  it('carries traffic pod to Service to pod, by cluster DNS name and by ClusterIP', async () => {
    const service = await core.readNamespacedService({ namespace: ns, name: 'web' });
    for (const host of [`web.${ns}.svc.cluster.local`, service.spec?.clusterIP ?? '']) {
      await eventually(
        async () => {
          const { stdout } = await node().kubectl(['exec', '-n', ns, 'client', '--', ...httpGet(host, 80)]);
          assert.match(stdout, /^HTTP\/1\.[01] 200/);
          assert.match(stdout, /recon8s-web version=1 host=web/);
        },
        { timeoutMs: 60_000, description: `an HTTP answer from ${host}` },
      );
    }
  });

  it('forwards pod traffic only to pods: nothing from a pod is routed past the machine', () => {
    const forward = execFileSync('iptables', ['-w', '-S', 'FORWARD'], { encoding: 'utf8' }).split('\n');
    // kube-proxy puts its own (narrower) rules in front later: none of them accepts pod traffic outright.
    assert.ok(forward.includes('-A FORWARD -j CNI-RECON8S-LOCAL'), forward.join('\n'));
    assert.ok(!forward.some((l) => /^-A FORWARD( -s 10\.244\.0\.0\/24)? -j ACCEPT$/.test(l)), forward.join('\n'));
    const chain = execFileSync('iptables', ['-w', '-S', 'CNI-RECON8S-LOCAL'], { encoding: 'utf8' });
    assert.match(
      chain,
      /-A CNI-RECON8S-LOCAL -s 10\.244\.0\.0\/24 -d 10\.244\.0\.0\/24 -j RETURN\n-A CNI-RECON8S-LOCAL -s 10\.244\.0\.0\/24 -j DROP/,
    );
    const nat = execFileSync('iptables', ['-w', '-t', 'nat', '-S', 'POSTROUTING'], { encoding: 'utf8' });
    assert.doesNotMatch(nat, /MASQUERADE.*10\.244|10\.244.*MASQUERADE/, 'pod traffic is masqueraded');
  });

  it('binds a StatefulSet claim to a local volume that a non-root pod can write', async () => {
    await node().kubectl(
      ['apply', '-n', ns, '-f', '-'],
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'disk' },
        spec: {
          serviceName: 'disk',
          replicas: 1,
          selector: { matchLabels: { app: 'disk' } },
          template: {
            metadata: { labels: { app: 'disk' } },
            spec: {
              securityContext: { runAsUser: 999, runAsGroup: 999, fsGroup: 999 },
              terminationGracePeriodSeconds: 0,
              containers: [
                {
                  name: 'writer',
                  image: node().images.mysql,
                  imagePullPolicy: 'Never',
                  securityContext: RESTRICTED,
                  command: ['bash', '-c', 'echo written-by-$(id -u) > /data/proof && exec sleep infinity'],
                  volumeMounts: [{ name: 'data', mountPath: '/data' }],
                  readinessProbe: { exec: { command: ['cat', '/data/proof'] }, periodSeconds: 1 },
                },
              ],
            },
          },
          volumeClaimTemplates: [
            {
              metadata: { name: 'data' },
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          ],
        },
      }),
    );
    await readyPod('disk-0');
    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data-disk-0' });
    assert.equal(claim.status?.phase, 'Bound');
    const { stdout } = await node().kubectl(['exec', '-n', ns, 'disk-0', '--', 'cat', '/data/proof']);
    assert.equal(stdout.trim(), 'written-by-999');
  });

  it('frees a volume whose claim is deleted: emptied and Available again, as a Delete policy would', async () => {
    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data-disk-0' });
    const volume = claim.spec?.volumeName ?? '';
    assert.match(volume, /^recon8s-node-pv-\d+$/);
    await node().kubectl(['delete', 'statefulset', '-n', ns, 'disk', '--wait=true']);
    await node().kubectl(['delete', 'pod', '-n', ns, 'disk-0', '--ignore-not-found', '--wait=true']);
    await node().kubectl(['delete', 'pvc', '-n', ns, 'data-disk-0', '--wait=true']);
    await eventually(
      async () => {
        const pv = await core.readPersistentVolume({ name: volume });
        assert.equal(pv.status?.phase, 'Available', JSON.stringify(pv.status));
        assert.equal(pv.spec?.claimRef, undefined);
        const path = pv.spec?.local?.path ?? '';
        assert.deepEqual(readdirSync(path), [], `${path} still holds files`);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: `${volume} Available and empty` },
    );
  });
});
