import assert from 'node:assert/strict';
import { ApiObject, Chart, App as Cdk8sApp } from 'cdk8s';
import { Construct } from 'constructs';
import { App, APP_CONTAINER_NAME } from '../../constructs/app/app.js';
import { MySQLCluster } from '../../constructs/mysql/mysql-cluster.js';
import type { AppProps } from '../../constructs/app/app.js';
import type { ExpectedProblem } from './support/app-synth.js';
import {
  assertProblem,
  autoscalerOf,
  containerOf,
  deploymentOf,
  disruptionBudgetOf,
  emptyValues,
  has,
  invalidApp,
  kinds,
  newChart,
  podSpecOf,
  serviceOf,
  synthApp,
} from './support/app-synth.js';

const SELECTOR = { 'app.kubernetes.io/instance': 'web', 'app.kubernetes.io/name': 'web' };
const LABELS = { ...SELECTOR, 'app.kubernetes.io/managed-by': 'recon8s' };

const RESTRICTED_CONTAINER = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  readOnlyRootFilesystem: false,
  runAsNonRoot: true,
  seccompProfile: { type: 'RuntimeDefault' },
};

/** The acceptance example. */
const ACCEPTANCE: AppProps = {
  image: 'nginx',
  replicas: 2,
  env: [{ name: 'GREETING', value: 'hello' }],
  resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { memory: '128Mi' } },
  ports: [{ name: 'http', port: 8080, targetPort: 80 }],
};

/** Uses nearly every field, so that whole-output properties are checked on a rich object set. */
const EVERYTHING: AppProps = {
  image: 'registry.example.com/shop/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
  command: ['/bin/web'],
  args: ['--port', '8080'],
  env: [
    { name: 'MODE', value: 'production' },
    { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
    { name: 'FEATURES', valueFrom: { configMapKeyRef: { name: 'flags', key: 'features', optional: true } } },
  ],
  ports: [
    { name: 'http', port: 80, targetPort: 8080 },
    { name: 'metrics', port: 9090, protocol: 'TCP' },
  ],
  serviceType: 'LoadBalancer',
  resources: { requests: { cpu: 1, memory: '1Gi' }, limits: { cpu: '2', memory: '2Gi' } },
  livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, initialDelaySeconds: 5 },
  readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 3 },
  autoscaling: { minReplicas: 2, maxReplicas: 10, targetCPUUtilizationPercent: 70, targetMemoryUtilizationPercent: 90 },
  labels: { team: 'shop', 'example.com/tier': 'frontend' },
  annotations: { 'example.com/owner': 'shop@example.com' },
  serviceAccountName: 'web',
  imagePullPolicy: 'Always',
  imagePullSecrets: ['registry'],
  securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000, readOnlyRootFilesystem: true },
  nodeSelector: { 'kubernetes.io/arch': 'amd64' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'shop', effect: 'NoSchedule' }],
};

describe('App', () => {
  describe('the acceptance example (nginx, 2 replicas, env, resources, port 8080→80)', () => {
    const s = synthApp(ACCEPTANCE);

    it('renders a Deployment, a Service and a NetworkPolicy named after the App (and a PDB, having 2 replicas)', () => {
      assert.deepEqual(kinds(s), ['Deployment', 'Service', 'PodDisruptionBudget', 'NetworkPolicy']);
      for (const o of s.objects) assert.deepEqual([o.metadata.name, o.metadata.namespace], ['web', 'ns'], o.kind);
    });

    it('runs 2 replicas of exactly the given container', () => {
      assert.equal(deploymentOf(s).spec?.replicas, 2);
      assert.deepEqual(containerOf(s), {
        name: 'app',
        image: 'nginx',
        imagePullPolicy: 'IfNotPresent',
        env: [{ name: 'GREETING', value: 'hello' }],
        ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
        resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { memory: '128Mi' } },
        securityContext: RESTRICTED_CONTAINER,
        volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
      });
    });

    it('exposes port 8080 on the Service, targeting container port 80', () => {
      assert.deepEqual(serviceOf(s).spec, {
        type: 'ClusterIP',
        selector: SELECTOR,
        ports: [{ name: 'http', port: 8080, targetPort: 80, protocol: 'TCP' }],
      });
    });
  });

  describe('defaults', () => {
    const s = synthApp({ image: 'nginx:1.27' });

    it('renders only a Deployment (and its NetworkPolicy) for an image alone, with 1 replica', () => {
      assert.deepEqual(kinds(s), ['Deployment', 'NetworkPolicy']);
      assert.equal(deploymentOf(s).spec?.replicas, 1);
      assert.equal(s.app.service, undefined);
      assert.equal(s.app.autoscaler, undefined);
      assert.equal(s.app.disruptionBudget, undefined);
    });

    it("pulls IfNotPresent (not cdk8s-plus's Always)", () => {
      assert.equal(containerOf(s).imagePullPolicy, 'IfNotPresent');
    });

    it('runs as uid/gid 65532, non-root, restricted-profile compatible', () => {
      assert.deepEqual(podSpecOf(s).securityContext, {
        runAsUser: 65532,
        runAsGroup: 65532,
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      assert.deepEqual(containerOf(s).securityContext, RESTRICTED_CONTAINER);
    });

    it('requests 100m CPU and 128Mi memory, limits memory to 256Mi and sets no CPU limit', () => {
      assert.deepEqual(containerOf(s).resources, {
        requests: { cpu: '100m', memory: '128Mi' },
        limits: { memory: '256Mi' },
      });
    });

    it('mounts a writable /tmp emptyDir', () => {
      assert.deepEqual(podSpecOf(s).volumes, [{ name: 'tmp', emptyDir: {} }]);
      assert.deepEqual(containerOf(s).volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]);
    });

    it('mounts no API token and injects no service links', () => {
      assert.equal(podSpecOf(s).automountServiceAccountToken, false);
      assert.equal(podSpecOf(s).serviceAccountName, undefined);
      assert.equal(podSpecOf(s).enableServiceLinks, false);
    });

    it('rolls out by surging, never below the desired count, and keeps 5 old ReplicaSets', () => {
      const spec = deploymentOf(s).spec;
      assert.deepEqual(spec?.strategy, {
        type: 'RollingUpdate',
        rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 },
      });
      assert.equal(spec?.revisionHistoryLimit, 5);
    });

    it('adds nothing nobody asked for: no probes, no affinity, no grace period, no command, no empty fields', () => {
      const c = containerOf(s);
      for (const f of ['livenessProbe', 'readinessProbe', 'startupProbe', 'command', 'args', 'env', 'ports'])
        assert.ok(!(f in c), f);
      const pod = podSpecOf(s);
      for (const f of ['affinity', 'terminationGracePeriodSeconds', 'imagePullSecrets', 'nodeSelector', 'tolerations'])
        assert.ok(!(f in pod), f);
      assert.deepEqual(emptyValues(s.objects), []);
    });

    it('emits no empty maps or lists for a spec that uses every field, nor for empty ones', () => {
      assert.deepEqual(emptyValues(synthApp(EVERYTHING).objects), []);
      const empties = synthApp({
        image: 'nginx',
        command: [],
        args: [],
        env: [],
        ports: [],
        imagePullSecrets: [],
        tolerations: [],
        nodeSelector: {},
        labels: {},
        annotations: {},
        resources: {},
      });
      assert.deepEqual(emptyValues(empties.objects), []);
      assert.ok(!('resources' in containerOf(empties)));
      assert.deepEqual(kinds(empties), ['Deployment', 'NetworkPolicy']);
    });

    it('exposes the validated spec with every default applied, frozen, leaving the props untouched', () => {
      const props = { image: 'nginx' };
      const { app } = synthApp(props);
      assert.deepEqual(props, { image: 'nginx' });
      assert.equal(app.spec.replicas, 1);
      assert.equal(app.spec.serviceType, 'ClusterIP');
      assert.equal(app.spec.imagePullPolicy, 'IfNotPresent');
      assert.deepEqual(app.spec.securityContext, {
        runAsUser: 65532,
        runAsGroup: 65532,
        runAsNonRoot: true,
        readOnlyRootFilesystem: false,
      });
      assert.ok(Object.isFrozen(app.spec) && Object.isFrozen(app.spec.securityContext));
    });
  });

  describe('names and selectors', () => {
    it('names every object after the construct id, without hashes', () => {
      const s = synthApp(EVERYTHING, { id: 'shop-web' });
      assert.deepEqual(kinds(s), [
        'Deployment',
        'Service',
        'HorizontalPodAutoscaler',
        'PodDisruptionBudget',
        'NetworkPolicy',
      ]);
      for (const o of s.objects) assert.equal(o.metadata.name, 'shop-web', o.kind);
      assert.equal(s.app.node.id, 'shop-web');
    });

    it('selects on exactly the stable labels, everywhere a selector appears', () => {
      const s = synthApp({ ...EVERYTHING, autoscaling: undefined, replicas: 3 });
      assert.deepEqual(deploymentOf(s).spec?.selector, { matchLabels: SELECTOR });
      assert.deepEqual(serviceOf(s).spec?.selector, SELECTOR);
      assert.deepEqual(disruptionBudgetOf(s).spec?.selector, { matchLabels: SELECTOR });
      assert.deepEqual(s.app.selector, SELECTOR);
    });

    it('never mentions cdk8s.io/metadata.addr', () => {
      assert.ok(!JSON.stringify(synthApp(EVERYTHING).objects).includes('cdk8s.io'));
    });

    it('renders the same objects wherever the App sits in the construct tree', () => {
      const nested = synthApp(EVERYTHING, { scope: (chart) => new Construct(new Construct(chart, 'team'), 'shop') });
      assert.deepEqual(nested.objects, synthApp(EVERYTHING).objects);
    });

    it('leaves the namespace to the chart', () => {
      for (const o of synthApp(EVERYTHING, { namespace: null }).objects)
        assert.ok(!('namespace' in o.metadata), o.kind);
      for (const o of synthApp(EVERYTHING, { namespace: 'shop' }).objects)
        assert.equal(o.metadata.namespace, 'shop', o.kind);
    });

    it('puts user labels and annotations on every object and the pod template, but not in selectors', () => {
      const s = synthApp({ ...EVERYTHING, autoscaling: undefined, replicas: 2, affinity: undefined });
      const labels = { ...LABELS, team: 'shop', 'example.com/tier': 'frontend' };
      const annotations = { 'example.com/owner': 'shop@example.com' };
      assert.deepEqual(kinds(s), ['Deployment', 'Service', 'PodDisruptionBudget', 'NetworkPolicy']);
      for (const o of s.objects)
        assert.deepEqual([o.metadata.labels, o.metadata.annotations], [labels, annotations], o.kind);
      assert.deepEqual(deploymentOf(s).spec?.template.metadata, { labels, annotations });
      const selectors = [
        deploymentOf(s).spec?.selector.matchLabels,
        serviceOf(s).spec?.selector,
        disruptionBudgetOf(s).spec?.selector?.matchLabels,
        podSpecOf(s).affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0].podAffinityTerm
          .labelSelector?.matchLabels,
      ];
      for (const sel of selectors) assert.deepEqual(sel, SELECTOR);
    });

    it('labels objects with the stable labels only when the user gives none', () => {
      for (const o of synthApp(ACCEPTANCE).objects) {
        assert.deepEqual(o.metadata.labels, LABELS, o.kind);
        assert.ok(!('annotations' in o.metadata), o.kind);
      }
    });
  });

  describe('Service', () => {
    it('is not rendered without ports', () => {
      assert.ok(!has(synthApp({ image: 'worker' }), 'Service'));
      assert.ok(!has(synthApp({ image: 'worker', ports: [] }), 'Service'));
      assert.ok(!('ports' in containerOf(synthApp({ image: 'worker' }))));
    });

    it('targets the port itself when targetPort is not given, and keeps the protocol', () => {
      const s = synthApp({
        image: 'dns',
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53 },
        ],
      });
      assert.deepEqual(serviceOf(s).spec?.ports, [
        { name: 'dns', port: 53, targetPort: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, targetPort: 53, protocol: 'TCP' },
      ]);
      assert.deepEqual(containerOf(s).ports, [
        { name: 'dns', containerPort: 53, protocol: 'UDP' },
        { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
      ]);
    });

    it('accepts a single port without a name, as Kubernetes does, and renders it unnamed', () => {
      const s = synthApp({ image: 'web', ports: [{ port: 80, targetPort: 8080 }] });
      assert.deepEqual(serviceOf(s).spec?.ports, [{ port: 80, targetPort: 8080, protocol: 'TCP' }]);
      assert.deepEqual(containerOf(s).ports, [{ containerPort: 8080, protocol: 'TCP' }]);
    });

    for (const type of ['NodePort', 'LoadBalancer'] as const) {
      it(`is of type ${type} when asked, leaving nodePort to the API server`, () => {
        const spec = serviceOf(synthApp({ ...ACCEPTANCE, serviceType: type })).spec;
        assert.equal(spec?.type, type);
        assert.ok(!('nodePort' in (spec?.ports?.[0] ?? {})));
      });
    }
  });

  describe('autoscaling', () => {
    const s = synthApp({
      image: 'nginx',
      replicas: 4,
      autoscaling: { maxReplicas: 5 },
      resources: { requests: { cpu: '100m', memory: '64Mi' } },
    });

    it('leaves replicas to the HorizontalPodAutoscaler', () => {
      assert.ok(!('replicas' in (deploymentOf(s).spec ?? {})));
    });

    it('renders an autoscaling/v2 HPA on the Deployment, targeting 80% CPU by default', () => {
      const hpa = autoscalerOf(s);
      assert.equal(hpa.apiVersion, 'autoscaling/v2');
      assert.deepEqual(hpa.metadata?.name, 'web');
      assert.deepEqual(hpa.spec, {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
        minReplicas: 1,
        maxReplicas: 5,
        metrics: [
          { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } },
        ],
      });
      assert.equal(s.app.autoscaler?.name, 'web');
    });

    it('adds a memory target when one is set', () => {
      const hpa = autoscalerOf(
        synthApp({
          image: 'nginx',
          autoscaling: { maxReplicas: 3, targetCPUUtilizationPercent: 60, targetMemoryUtilizationPercent: 75 },
        }),
      );
      assert.deepEqual(hpa.spec?.metrics, [
        { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } },
        { type: 'Resource', resource: { name: 'memory', target: { type: 'Utilization', averageUtilization: 75 } } },
      ]);
    });

    it('spreads pods over nodes, since they may become several', () => {
      assert.ok(podSpecOf(s).affinity?.podAntiAffinity);
    });
  });

  describe('PodDisruptionBudget', () => {
    it('allows one pod at a time to be disrupted when there are several replicas', () => {
      const s = synthApp({ image: 'nginx', replicas: 3 });
      const pdb = disruptionBudgetOf(s);
      assert.equal(pdb.apiVersion, 'policy/v1');
      assert.equal(pdb.metadata?.name, 'web');
      assert.deepEqual(pdb.spec, {
        maxUnavailable: 1,
        selector: { matchLabels: SELECTOR },
        unhealthyPodEvictionPolicy: 'AlwaysAllow',
      });
      assert.equal(s.app.disruptionBudget?.name, 'web');
    });

    it('is rendered when the autoscaler keeps at least 2 pods', () => {
      assert.ok(
        has(synthApp({ image: 'nginx', autoscaling: { minReplicas: 2, maxReplicas: 4 } }), 'PodDisruptionBudget'),
      );
    });

    it('is not rendered for 0 or 1 replica, nor for an autoscaler whose floor is 1', () => {
      assert.ok(!has(synthApp({ image: 'nginx', replicas: 1 }), 'PodDisruptionBudget'));
      assert.ok(!has(synthApp({ image: 'nginx', replicas: 0 }), 'PodDisruptionBudget'));
      assert.ok(
        !has(synthApp({ image: 'nginx', replicas: 5, autoscaling: { maxReplicas: 5 } }), 'PodDisruptionBudget'),
      );
    });

    it('takes maxUnavailable as a count or a percentage of the desired pods', () => {
      const count = disruptionBudgetOf(
        synthApp({ image: 'nginx', replicas: 6, disruptionBudget: { maxUnavailable: 2 } }),
      );
      assert.equal(count.spec?.maxUnavailable, 2);
      const percent = disruptionBudgetOf(
        synthApp({ image: 'nginx', replicas: 8, disruptionBudget: { maxUnavailable: '25%' } }),
      );
      assert.equal(percent.spec?.maxUnavailable, '25%');
    });

    it('is not rendered when disruptionBudget.enabled is false, however many pods run', () => {
      const s = synthApp({ image: 'nginx', replicas: 4, ports: [{ port: 80 }], disruptionBudget: { enabled: false } });
      assert.ok(!has(s, 'PodDisruptionBudget'));
      assert.equal(s.app.disruptionBudget, undefined);
      assert.ok(has(s, 'Deployment') && has(s, 'Service'));
    });

    it('renders replicas: 0 explicitly (scaled to zero is a value we own)', () => {
      assert.equal(deploymentOf(synthApp({ image: 'nginx', replicas: 0 })).spec?.replicas, 0);
    });
  });

  describe('affinity', () => {
    const userAffinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
        },
      },
    };

    it('spreads several replicas over nodes by default, preferring rather than requiring', () => {
      assert.deepEqual(podSpecOf(synthApp({ image: 'nginx', replicas: 2 })).affinity, {
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: SELECTOR } },
            },
          ],
        },
      });
    });

    it("replaces the default with the user's affinity", () => {
      assert.deepEqual(
        podSpecOf(synthApp({ image: 'nginx', replicas: 2, affinity: userAffinity })).affinity,
        userAffinity,
      );
      assert.deepEqual(podSpecOf(synthApp({ image: 'nginx', affinity: userAffinity })).affinity, userAffinity);
    });

    it('renders none for an empty affinity (an opt-out of the default)', () => {
      assert.ok(!('affinity' in podSpecOf(synthApp({ image: 'nginx', replicas: 2, affinity: {} }))));
    });
  });

  describe('security context', () => {
    it('renders an explicit root override as runAsUser 0 with runAsNonRoot: false', () => {
      const s = synthApp({ image: 'legacy', securityContext: { runAsUser: 0, runAsNonRoot: false } });
      assert.deepEqual(podSpecOf(s).securityContext, {
        runAsUser: 0,
        runAsGroup: 65532,
        runAsNonRoot: false,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      assert.deepEqual(containerOf(s).securityContext, { ...RESTRICTED_CONTAINER, runAsNonRoot: false });
    });

    it('sets the given uid, gid, fsGroup and read-only root filesystem', () => {
      const s = synthApp({
        image: 'nginx',
        securityContext: { runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, readOnlyRootFilesystem: true },
      });
      assert.deepEqual(podSpecOf(s).securityContext, {
        runAsUser: 1000,
        runAsGroup: 3000,
        fsGroup: 2000,
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      assert.equal(containerOf(s).securityContext?.readOnlyRootFilesystem, true);
      assert.deepEqual(containerOf(s).volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]);
    });

    it('runs as the given ServiceAccount and lets it decide about the token', () => {
      const pod = podSpecOf(synthApp({ image: 'nginx', serviceAccountName: 'web-reader' }));
      assert.equal(pod.serviceAccountName, 'web-reader');
      assert.ok(!('automountServiceAccountToken' in pod));
    });
  });

  describe('probes', () => {
    it('renders an httpGet liveness probe on a named port with default timings', () => {
      assert.deepEqual(
        containerOf(synthApp({ ...ACCEPTANCE, livenessProbe: { httpGet: { port: 'http' } } })).livenessProbe,
        {
          httpGet: { path: '/', port: 'http', scheme: 'HTTP' },
          initialDelaySeconds: 0,
          periodSeconds: 10,
          timeoutSeconds: 1,
          failureThreshold: 3,
        },
      );
    });

    it('renders a tcpSocket readiness probe on a port number with the given timings', () => {
      const probe = {
        tcpSocket: { port: 5432 },
        initialDelaySeconds: 5,
        periodSeconds: 2,
        timeoutSeconds: 3,
        failureThreshold: 6,
      };
      assert.deepEqual(containerOf(synthApp({ image: 'pg', readinessProbe: probe })).readinessProbe, probe);
    });

    it('renders an exec probe and an HTTPS path', () => {
      const c = containerOf(
        synthApp({
          image: 'nginx',
          livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] } },
          readinessProbe: { httpGet: { path: '/ready', port: 8443, scheme: 'HTTPS' } },
        }),
      );
      assert.deepEqual(c.livenessProbe?.exec, { command: ['cat', '/tmp/healthy'] });
      assert.deepEqual(c.readinessProbe?.httpGet, { path: '/ready', port: 8443, scheme: 'HTTPS' });
    });
  });

  describe('container', () => {
    const c = containerOf(synthApp(EVERYTHING));

    it('is named "app", with the given image, pull policy, command and args', () => {
      assert.equal(c.name, APP_CONTAINER_NAME);
      assert.equal(c.name, 'app');
      assert.equal(c.image, EVERYTHING.image);
      assert.equal(c.imagePullPolicy, 'Always');
      assert.deepEqual([c.command, c.args], [['/bin/web'], ['--port', '8080']]);
    });

    it('takes env from values, Secret keys and ConfigMap keys, in order', () => {
      assert.deepEqual(c.env, [
        { name: 'MODE', value: 'production' },
        { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
        { name: 'FEATURES', valueFrom: { configMapKeyRef: { name: 'flags', key: 'features', optional: true } } },
      ]);
    });

    it('uses exactly the given resources, numbers included', () => {
      assert.deepEqual(c.resources, { requests: { cpu: 1, memory: '1Gi' }, limits: { cpu: '2', memory: '2Gi' } });
    });

    it('schedules with the given pull secrets, node selector and tolerations', () => {
      const pod = podSpecOf(synthApp(EVERYTHING));
      assert.deepEqual(pod.imagePullSecrets, [{ name: 'registry' }]);
      assert.deepEqual(pod.nodeSelector, { 'kubernetes.io/arch': 'amd64' });
      assert.deepEqual(pod.tolerations, [{ key: 'dedicated', operator: 'Equal', value: 'shop', effect: 'NoSchedule' }]);
    });
  });

  describe('determinism', () => {
    it('gives byte-identical JSON on every synthesis', () => {
      assert.equal(JSON.stringify(synthApp(EVERYTHING).objects), JSON.stringify(synthApp(EVERYTHING).objects));
    });

    it("does not depend on the order of the props' keys", () => {
      const reversed = Object.fromEntries(Object.entries(EVERYTHING).reverse()) as AppProps;
      assert.equal(JSON.stringify(synthApp(reversed).objects), JSON.stringify(synthApp(EVERYTHING).objects));
    });
  });

  describe('validation', () => {
    interface FailCase extends ExpectedProblem {
      readonly name: string;
      readonly props: unknown;
      readonly id?: string;
    }
    const env = (e: unknown): unknown => ({ image: 'nginx', env: [e] });
    const secretRef = { secretKeyRef: { name: 'db', key: 'password' } };
    const configMapRef = { configMapKeyRef: { name: 'flags', key: 'features' } };
    const http = { name: 'http', port: 80 };

    const cases: FailCase[] = [
      {
        name: "fails on an invalid name such as 'Web_1'",
        id: 'Web_1',
        props: { image: 'nginx' },
        field: 'metadata.name',
        value: 'Web_1',
        expected: /DNS-1035 label/,
      },
      {
        name: 'fails on a name starting with a digit',
        id: '1web',
        props: { image: 'nginx' },
        field: 'metadata.name',
        value: '1web',
        expected: /DNS-1035 label/,
      },
      {
        name: 'fails on a name longer than 63 characters',
        id: 'a'.repeat(64),
        props: { image: 'nginx' },
        field: 'metadata.name',
        value: 'a'.repeat(64),
        expected: /at most 63 characters/,
      },
      { name: 'fails when image is missing', props: {}, field: 'spec.image', expected: /required/ },
      {
        name: 'fails when a probe names a port the App does not declare',
        props: {
          image: 'nginx',
          ports: [{ name: 'http', port: 80 }],
          readinessProbe: { httpGet: { port: 'metrics' } },
        },
        field: 'spec.readinessProbe',
        value: {
          httpGet: { port: 'metrics', path: '/', scheme: 'HTTP' },
          initialDelaySeconds: 0,
          periodSeconds: 10,
          timeoutSeconds: 1,
          failureThreshold: 3,
        },
        expected: /a probe port name that is one of spec\.ports\[\]\.name/,
      },
      {
        name: 'fails when the liveness probe names a port and there are no ports',
        props: { image: 'nginx', livenessProbe: { tcpSocket: { port: 'http' } } },
        field: 'spec.livenessProbe',
        value: {
          tcpSocket: { port: 'http' },
          initialDelaySeconds: 0,
          periodSeconds: 10,
          timeoutSeconds: 1,
          failureThreshold: 3,
        },
        expected: /a probe port name that is one of spec\.ports\[\]\.name/,
      },
      {
        name: 'fails when autoscaling has no CPU request to measure against',
        props: { image: 'nginx', resources: { requests: { memory: '64Mi' } }, autoscaling: { maxReplicas: 3 } },
        field: 'spec.resources',
        value: { requests: { memory: '64Mi' } },
        expected: /resources\.requests\.cpu .* when autoscaling is set/,
      },
      {
        name: 'fails when image is empty',
        props: { image: '' },
        field: 'spec.image',
        value: '',
        expected: /at least 1 character/,
      },
      {
        name: 'fails when image contains a space',
        props: { image: 'nginx latest' },
        field: 'spec.image',
        value: 'nginx latest',
        expected: /an image reference: \[host\[:port\]\/\]name\[:tag\]/,
      },
      ...['Nginx:::latest', 'nginx:', 'nginx@sha256:abc', 'Team/app', 'nginx:-1', '/nginx', 'nginx/'].map((image) => ({
        name: `fails when image is not an image reference: ${image}`,
        props: { image },
        field: 'spec.image',
        value: image,
        expected: /an image reference: .*the name in lowercase/,
      })),
      {
        name: 'fails when image is not a string',
        props: { image: 42 },
        field: 'spec.image',
        value: 42,
        expected: /a string/,
      },
      {
        name: 'fails when replicas is -1',
        props: { image: 'nginx', replicas: -1 },
        field: 'spec.replicas',
        value: -1,
        expected: /an integer from 0 to 1000/,
      },
      {
        name: 'fails when replicas is over 1000',
        props: { image: 'nginx', replicas: 1001 },
        field: 'spec.replicas',
        value: 1001,
        expected: /an integer from 0 to 1000/,
      },
      {
        name: 'fails when replicas is not an integer',
        props: { image: 'nginx', replicas: 1.5 },
        field: 'spec.replicas',
        value: 1.5,
        expected: /an integer/,
      },
      {
        name: 'fails when replicas is a string',
        props: { image: 'nginx', replicas: '2' },
        field: 'spec.replicas',
        value: '2',
        expected: /an integer/,
      },
      {
        name: 'fails on an unknown field and names it',
        props: { image: 'nginx', replica: 2 },
        field: 'spec.replica',
        value: 2,
        expected: /no such field; known fields: .*\breplicas\b/,
      },
      {
        name: 'fails on an unknown nested field and names it',
        props: { image: 'nginx', ports: [{ ...http, nodePort: 30080 }] },
        field: 'spec.ports[0].nodePort',
        value: 30080,
        expected: /no such field/,
      },
      {
        name: 'fails when command is not a list',
        props: { image: 'nginx', command: 'nginx -g daemon' },
        field: 'spec.command',
        value: 'nginx -g daemon',
        expected: /a list of/,
      },
      {
        name: 'fails when an arg is not a string',
        props: { image: 'nginx', args: ['--port', 80] },
        field: 'spec.args[1]',
        value: 80,
        expected: /a string/,
      },
      {
        name: 'fails when both value and valueFrom are set',
        props: env({ name: 'A', value: 'x', valueFrom: secretRef }),
        field: 'spec.env[0]',
        value: { name: 'A', value: 'x', valueFrom: secretRef },
        expected: /exactly one of value or valueFrom/,
      },
      {
        name: 'fails when neither value nor valueFrom is set',
        props: env({ name: 'A' }),
        field: 'spec.env[0]',
        value: { name: 'A' },
        expected: /exactly one of value or valueFrom/,
      },
      {
        name: 'fails when valueFrom has both secretKeyRef and configMapKeyRef',
        props: env({ name: 'A', valueFrom: { ...secretRef, ...configMapRef } }),
        field: 'spec.env[0].valueFrom',
        value: { ...secretRef, ...configMapRef },
        expected: /exactly one of secretKeyRef or configMapKeyRef/,
      },
      {
        name: 'fails when valueFrom is empty',
        props: env({ name: 'A', valueFrom: {} }),
        field: 'spec.env[0].valueFrom',
        value: {},
        expected: /exactly one of secretKeyRef or configMapKeyRef/,
      },
      {
        name: 'fails on a duplicate env name',
        props: {
          image: 'nginx',
          env: [
            { name: 'A', value: '1' },
            { name: 'A', value: '2' },
          ],
        },
        field: 'spec.env[1]',
        value: { name: 'A' },
        expected: /a unique name \(item 0 has the same\)/,
      },
      {
        name: 'fails on an env name starting with a digit',
        props: env({ name: '1A', value: 'x' }),
        field: 'spec.env[0].name',
        value: '1A',
        expected: /not starting with a digit/,
      },
      {
        name: 'fails on an invalid Secret name in secretKeyRef',
        props: env({ name: 'A', valueFrom: { secretKeyRef: { name: 'My_Secret', key: 'k' } } }),
        field: 'spec.env[0].valueFrom.secretKeyRef.name',
        value: 'My_Secret',
        expected: /DNS subdomain name/,
      },
      {
        name: 'fails on an invalid ConfigMap key in configMapKeyRef',
        props: env({ name: 'A', valueFrom: { configMapKeyRef: { name: 'flags', key: 'a b' } } }),
        field: 'spec.env[0].valueFrom.configMapKeyRef.key',
        value: 'a b',
        expected: /a key of letters/,
      },
      {
        name: 'fails when a secretKeyRef has no key',
        props: env({ name: 'A', valueFrom: { secretKeyRef: { name: 'db' } } }),
        field: 'spec.env[0].valueFrom.secretKeyRef.key',
        expected: /required/,
      },
      {
        name: 'fails on a duplicate port name',
        props: { image: 'nginx', ports: [http, { name: 'http', port: 8080 }] },
        field: 'spec.ports',
        value: [
          { name: 'http', port: 80, protocol: 'TCP' },
          { name: 'http', port: 8080, protocol: 'TCP' },
        ],
        expected: /unique port names/,
      },
      {
        name: 'fails on two ports with the same port and protocol',
        props: { image: 'nginx', ports: [http, { name: 'web', port: 80 }] },
        field: 'spec.ports[1]',
        value: { port: 80, protocol: 'TCP' },
        expected: /a unique port\/protocol \(item 0 has the same\)/,
      },
      {
        name: 'fails on port 0',
        props: { image: 'nginx', ports: [{ name: 'http', port: 0 }] },
        field: 'spec.ports[0].port',
        value: 0,
        expected: /an integer from 1 to 65535/,
      },
      {
        name: 'fails on port 65536',
        props: { image: 'nginx', ports: [{ name: 'http', port: 65536 }] },
        field: 'spec.ports[0].port',
        value: 65536,
        expected: /an integer from 1 to 65535/,
      },
      {
        name: 'fails on a targetPort out of range',
        props: { image: 'nginx', ports: [{ ...http, targetPort: 70000 }] },
        field: 'spec.ports[0].targetPort',
        value: 70000,
        expected: /an integer from 1 to 65535/,
      },
      {
        name: 'fails on an upper-case port name',
        props: { image: 'nginx', ports: [{ name: 'HTTP', port: 80 }] },
        field: 'spec.ports[0].name',
        value: 'HTTP',
        expected: /IANA service name/,
      },
      {
        name: 'fails on a port name longer than 15 characters',
        props: { image: 'nginx', ports: [{ name: 'a-very-long-port-name', port: 80 }] },
        field: 'spec.ports[0].name',
        value: 'a-very-long-port-name',
        expected: /at most 15 characters/,
      },
      {
        name: 'fails on several ports when one has no name',
        props: { image: 'nginx', ports: [http, { port: 8080 }] },
        field: 'spec.ports',
        value: [
          { name: 'http', port: 80, protocol: 'TCP' },
          { port: 8080, protocol: 'TCP' },
        ],
        expected: /a name on every port when there are several/,
      },
      {
        name: 'fails on an unknown protocol',
        props: { image: 'nginx', ports: [{ ...http, protocol: 'HTTP' }] },
        field: 'spec.ports[0].protocol',
        value: 'HTTP',
        expected: /one of "TCP", "UDP", "SCTP"/,
      },
      {
        name: 'fails on a NodePort without ports',
        props: { image: 'nginx', serviceType: 'NodePort' },
        field: 'spec.serviceType',
        value: 'NodePort',
        expected: /a Service needs at least one port/,
      },
      {
        name: 'fails on a LoadBalancer with an empty list of ports',
        props: { image: 'nginx', serviceType: 'LoadBalancer', ports: [] },
        field: 'spec.serviceType',
        value: 'LoadBalancer',
        expected: /a Service needs at least one port/,
      },
      {
        name: 'fails on an unknown serviceType',
        props: { image: 'nginx', ports: [http], serviceType: 'ExternalName' },
        field: 'spec.serviceType',
        value: 'ExternalName',
        expected: /one of "ClusterIP", "NodePort", "LoadBalancer"/,
      },
      {
        name: 'fails on an invalid CPU quantity',
        props: { image: 'nginx', resources: { requests: { cpu: '1 core' } } },
        field: 'spec.resources.requests.cpu',
        value: '1 core',
        expected: /a Kubernetes quantity/,
      },
      {
        name: 'fails on a negative memory amount',
        props: { image: 'nginx', resources: { limits: { memory: -1 } } },
        field: 'spec.resources.limits.memory',
        value: -1,
        expected: /a Kubernetes quantity/,
      },
      {
        name: 'fails on an unknown resource name',
        props: { image: 'nginx', resources: { requests: { gpu: 1 } } },
        field: 'spec.resources.requests.gpu',
        value: 1,
        expected: /no such field/,
      },
      {
        name: 'fails when a probe has no action',
        props: { image: 'nginx', livenessProbe: { periodSeconds: 5 } },
        field: 'spec.livenessProbe',
        value: { periodSeconds: 5, initialDelaySeconds: 0, timeoutSeconds: 1, failureThreshold: 3 },
        expected: /exactly one of httpGet, tcpSocket or exec/,
      },
      {
        name: 'fails when a probe has two actions',
        props: { image: 'nginx', readinessProbe: { tcpSocket: { port: 80 }, exec: { command: ['true'] } } },
        field: 'spec.readinessProbe',
        expected: /exactly one of httpGet, tcpSocket or exec/,
        value: {
          tcpSocket: { port: 80 },
          exec: { command: ['true'] },
          initialDelaySeconds: 0,
          periodSeconds: 10,
          timeoutSeconds: 1,
          failureThreshold: 3,
        },
      },
      {
        name: 'fails when an httpGet path does not start with /',
        props: { image: 'nginx', livenessProbe: { httpGet: { path: 'healthz', port: 80 } } },
        field: 'spec.livenessProbe.httpGet.path',
        value: 'healthz',
        expected: /a path starting with "\/"/,
      },
      {
        name: 'fails when an httpGet has no port',
        props: { image: 'nginx', livenessProbe: { httpGet: { path: '/' } } },
        field: 'spec.livenessProbe.httpGet.port',
        expected: /a port number or name \(required\)/,
      },
      {
        name: 'fails when a probe port is neither a number nor a name',
        props: { image: 'nginx', livenessProbe: { tcpSocket: { port: '' } } },
        field: 'spec.livenessProbe.tcpSocket.port',
        value: '',
        expected: /a port number or a port name/,
      },
      {
        name: 'fails on an unknown httpGet scheme',
        props: { image: 'nginx', livenessProbe: { httpGet: { port: 80, scheme: 'GRPC' } } },
        field: 'spec.livenessProbe.httpGet.scheme',
        value: 'GRPC',
        expected: /one of "HTTP", "HTTPS"/,
      },
      {
        name: 'fails when periodSeconds is 0',
        props: { image: 'nginx', livenessProbe: { tcpSocket: { port: 80 }, periodSeconds: 0 } },
        field: 'spec.livenessProbe.periodSeconds',
        value: 0,
        expected: /an integer from 1 to 3600/,
      },
      {
        name: 'fails when failureThreshold is over 100',
        props: { image: 'nginx', readinessProbe: { tcpSocket: { port: 80 }, failureThreshold: 101 } },
        field: 'spec.readinessProbe.failureThreshold',
        value: 101,
        expected: /an integer from 1 to 100/,
      },
      {
        name: 'fails when an exec probe has an empty command',
        props: { image: 'nginx', livenessProbe: { exec: { command: [] } } },
        field: 'spec.livenessProbe.exec.command',
        value: [],
        expected: /at least 1 item/,
      },
      ...[0, '0%', '101%', 'one'].map((maxUnavailable) => ({
        name: `fails when disruptionBudget.maxUnavailable is ${JSON.stringify(maxUnavailable)}`,
        props: { image: 'nginx', replicas: 3, disruptionBudget: { maxUnavailable } },
        field: 'spec.disruptionBudget.maxUnavailable',
        value: maxUnavailable,
        expected: /maxUnavailable of at least 1, or a percentage from "1%" to "100%"/,
      })),
      {
        name: 'fails when minReplicas > maxReplicas',
        props: { image: 'nginx', autoscaling: { minReplicas: 5, maxReplicas: 3 } },
        field: 'spec.autoscaling.minReplicas',
        value: 5,
        expected: /minReplicas no greater than maxReplicas/,
      },
      {
        name: 'fails when maxReplicas is missing',
        props: { image: 'nginx', autoscaling: { minReplicas: 2 } },
        field: 'spec.autoscaling.maxReplicas',
        expected: /required/,
      },
      {
        name: 'fails when minReplicas is 0',
        props: { image: 'nginx', autoscaling: { minReplicas: 0, maxReplicas: 3 } },
        field: 'spec.autoscaling.minReplicas',
        value: 0,
        expected: /an integer from 1 to 1000/,
      },
      {
        name: 'fails when the CPU target is 0%',
        props: { image: 'nginx', autoscaling: { maxReplicas: 3, targetCPUUtilizationPercent: 0 } },
        field: 'spec.autoscaling.targetCPUUtilizationPercent',
        value: 0,
        expected: /an integer from 1 to 1000/,
      },
      {
        name: 'fails when the memory target is over 1000%',
        props: { image: 'nginx', autoscaling: { maxReplicas: 3, targetMemoryUtilizationPercent: 1001 } },
        field: 'spec.autoscaling.targetMemoryUtilizationPercent',
        value: 1001,
        expected: /an integer from 1 to 1000/,
      },
      {
        name: 'fails on a reserved label key',
        props: { image: 'nginx', labels: { 'app.kubernetes.io/name': 'other' } },
        field: 'spec.labels',
        value: { 'app.kubernetes.io/name': 'other' },
        expected: /no keys under app\.kubernetes\.io\//,
      },
      {
        name: 'fails on a reserved annotation key',
        props: { image: 'nginx', annotations: { 'app.kubernetes.io/version': '1' } },
        field: 'spec.annotations',
        value: { 'app.kubernetes.io/version': '1' },
        expected: /no keys under app\.kubernetes\.io\//,
      },
      {
        name: 'fails on an invalid label key',
        props: { image: 'nginx', labels: { 'my team': 'shop' } },
        field: 'spec.labels["my team"]',
        value: 'my team',
        expected: /a qualified name/,
      },
      {
        name: 'fails on an invalid label value',
        props: { image: 'nginx', labels: { team: 'shop floor' } },
        field: 'spec.labels["team"]',
        value: 'shop floor',
        expected: /a label value/,
      },
      {
        name: 'fails on a label value longer than 63 characters',
        props: { image: 'nginx', labels: { team: 'a'.repeat(64) } },
        field: 'spec.labels["team"]',
        value: 'a'.repeat(64),
        expected: /at most 63 characters/,
      },
      {
        name: 'fails when an annotation value is not a string',
        props: { image: 'nginx', annotations: { 'example.com/count': 3 } },
        field: 'spec.annotations["example.com/count"]',
        value: 3,
        expected: /a string/,
      },
      {
        name: 'fails on an invalid serviceAccountName',
        props: { image: 'nginx', serviceAccountName: 'Web_Reader' },
        field: 'spec.serviceAccountName',
        value: 'Web_Reader',
        expected: /DNS subdomain name/,
      },
      {
        name: 'fails on an unknown imagePullPolicy',
        props: { image: 'nginx', imagePullPolicy: 'Sometimes' },
        field: 'spec.imagePullPolicy',
        value: 'Sometimes',
        expected: /one of "Always", "IfNotPresent", "Never"/,
      },
      {
        name: 'fails on a duplicate imagePullSecret',
        props: { image: 'nginx', imagePullSecrets: ['registry', 'registry'] },
        field: 'spec.imagePullSecrets[1]',
        value: 'registry',
        expected: /no duplicates/,
      },
      {
        name: 'fails on an invalid imagePullSecret name',
        props: { image: 'nginx', imagePullSecrets: ['Registry'] },
        field: 'spec.imagePullSecrets[0]',
        value: 'Registry',
        expected: /DNS subdomain name/,
      },
      {
        name: 'fails when runAsUser is 0 without runAsNonRoot: false',
        props: { image: 'nginx', securityContext: { runAsUser: 0 } },
        field: 'spec.securityContext.runAsUser',
        value: 0,
        expected: /runAsUser 0 \(root\) needs runAsNonRoot: false/,
      },
      {
        name: 'fails when runAsUser is 0 with runAsNonRoot: true',
        props: { image: 'nginx', securityContext: { runAsUser: 0, runAsNonRoot: true } },
        field: 'spec.securityContext.runAsUser',
        value: 0,
        expected: /runAsUser 0 \(root\) needs runAsNonRoot: false/,
      },
      {
        name: 'fails when runAsUser is negative',
        props: { image: 'nginx', securityContext: { runAsUser: -1 } },
        field: 'spec.securityContext.runAsUser',
        value: -1,
        expected: /an integer from 0 to 2147483647/,
      },
      {
        name: 'fails when runAsNonRoot is not a boolean',
        props: { image: 'nginx', securityContext: { runAsNonRoot: 'false' } },
        field: 'spec.securityContext.runAsNonRoot',
        value: 'false',
        expected: /true or false/,
      },
      {
        name: 'fails on an invalid nodeSelector key',
        props: { image: 'nginx', nodeSelector: { 'bad key': 'x' } },
        field: 'spec.nodeSelector["bad key"]',
        value: 'bad key',
        expected: /a qualified label key/,
      },
      {
        name: 'fails when tolerations is not a list',
        props: { image: 'nginx', tolerations: { key: 'dedicated' } },
        field: 'spec.tolerations',
        value: { key: 'dedicated' },
        expected: /a list of/,
      },
      {
        name: 'fails when affinity is not an object',
        props: { image: 'nginx', affinity: 'spread' },
        field: 'spec.affinity',
        value: 'spread',
        expected: /an object/,
      },
      {
        name: 'fails when the spec is not an object',
        props: 'nginx',
        field: 'spec',
        value: 'nginx',
        expected: /an object/,
      },
    ];

    for (const c of cases) {
      it(c.name, () => {
        assert.match(c.name, /^fails /);
        const { error, chart } = invalidApp(c.props, c.id);
        assertProblem(error, c);
        assert.match(error.message, new RegExp(`^App "${escape(c.id ?? 'web')}" is invalid:`));
        assert.equal(chart.node.children.length, 0, 'an invalid App must leave nothing in the construct tree');
      });
    }

    it('fails with every problem reported together', () => {
      const { error } = invalidApp(
        {
          image: 'nginx latest',
          replicas: -1,
          replica: 2,
          ports: [http, http],
          autoscaling: { minReplicas: 5, maxReplicas: 3 },
          labels: { 'app.kubernetes.io/name': 'x' },
          securityContext: { runAsUser: 0 },
        },
        'Web_1',
      );
      const want: ExpectedProblem[] = [
        { field: 'metadata.name', value: 'Web_1', expected: /DNS-1035 label/ },
        { field: 'spec.image', value: 'nginx latest', expected: /an image reference/ },
        { field: 'spec.replicas', value: -1, expected: /an integer from 0 to 1000/ },
        { field: 'spec.replica', value: 2, expected: /no such field/ },
        { field: 'spec.ports[1]', value: { port: 80, protocol: 'TCP' }, expected: /a unique port\/protocol/ },
        { field: 'spec.autoscaling.minReplicas', value: 5, expected: /no greater than maxReplicas/ },
        { field: 'spec.labels', value: { 'app.kubernetes.io/name': 'x' }, expected: /no keys under/ },
        { field: 'spec.securityContext.runAsUser', value: 0, expected: /needs runAsNonRoot: false/ },
      ];
      for (const w of want) assertProblem(error, w);
      assert.equal(error.problems.length, want.length, error.message);
    });

    it('fails before creating anything, leaving the chart empty', () => {
      const chart = newChart();
      assert.throws(() => new App(chart, 'web', { image: 'nginx', replicas: -1 }), /spec\.replicas: got -1/);
      assert.deepEqual(chart.node.children, []);
      assert.deepEqual(chart.toJson(), []);
    });
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('App image references', () => {
  it('takes every form of image reference a runtime takes, and renders it as given', () => {
    for (const image of [
      'nginx',
      'nginx:1.27',
      'nginxinc/nginx-unprivileged:1.27-alpine',
      'registry.example.com:5000/team/app:v1.2.3',
      'localhost:5000/app',
      'myregistry:5000/app',
      '[::1]:5000/team/app:tag',
      'a__b/c-d.e:TAG_1',
      `mysql@sha256:${'a'.repeat(64)}`,
      `docker.io/library/mysql:9.7@sha256:${'0'.repeat(64)}`,
    ])
      assert.equal(containerOf(synthApp({ image })).image, image);
  });
});

describe('objects rendered twice', () => {
  it('fails synth when two constructs render an object of one kind, namespace and name, naming both', () => {
    const app = new Cdk8sApp();
    const chart = new Chart(app, 'shop', { namespace: 'shop', disableResourceNameHashes: true });
    new MySQLCluster(chart, 'db', {});
    // Its Service "db-primary" would take the database's traffic.
    new App(chart, 'db-primary', { image: 'nginx', ports: [{ port: 80 }] });
    assert.throws(
      () => app.synthYaml(),
      (e: Error) => {
        const lines = e.message.split('\n').filter((l) => /rendered twice/.test(l));
        assert.deepEqual(lines, [
          '  [shop/db] Service shop/db-primary is rendered twice, by shop/db and by shop/db-primary: applied, one would overwrite the other. Rename one of them.',
        ]);
        return true;
      },
    );
  });

  it('fails synth when a recon8s construct renders what another object of the app already is', () => {
    const app = new Cdk8sApp();
    const chart = new Chart(app, 'shop', { namespace: 'shop', disableResourceNameHashes: true });
    new ApiObject(chart, 'hand-written', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } });
    new App(chart, 'web', { image: 'nginx' });
    assert.throws(
      () => app.synthYaml(),
      /Deployment shop\/web is rendered twice, by shop\/web and by shop\/hand-written/,
    );
  });

  it('synthesizes objects that differ in kind, namespace or name', () => {
    const app = new Cdk8sApp();
    new MySQLCluster(new Chart(app, 'shop', { namespace: 'shop', disableResourceNameHashes: true }), 'db', {});
    new MySQLCluster(new Chart(app, 'test', { namespace: 'test', disableResourceNameHashes: true }), 'db', {});
    new App(new Chart(app, 'web', { namespace: 'shop', disableResourceNameHashes: true }), 'db', { image: 'nginx' });
    assert.doesNotThrow(() => app.synthYaml());
  });
});
