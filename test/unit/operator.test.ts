import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { App, Chart, Testing } from 'cdk8s';
import type { AlertRule, KubernetesObject } from '../../constructs/index.js';
import type { OperatorChartProps } from '../../constructs/index.js';
import {
  CONTROLLER_ARGS,
  DEFAULT_OPERATOR_IMAGE,
  LEADER_ELECTION_LEASE,
  OperatorChart,
  Recon8sAlertRules,
  alertRules,
} from '../../constructs/index.js';
import { installFileHeader, operatorPropsFromEnv } from '../../apps/operator-env.js';
import { CONTROLLER_USAGE } from '../../lib/cli/controller-command.js';
import { CHILD_TYPES, OWNER_KINDS } from '../../lib/controller/kinds.js';

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
  verbs: string[];
}
interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}
interface RbacObject extends KubernetesObject {
  rules?: Rule[];
  roleRef?: { apiGroup: string; kind: string; name: string };
  subjects?: Subject[];
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: unknown[];
  ports?: { name: string; containerPort: number; protocol?: string }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: Record<string, unknown>;
  containers: Container[];
  volumes?: { name: string; emptyDir?: object }[];
}
interface Deployment extends KubernetesObject {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}

const NS = 'recon8s-system';
const SA: Subject = { kind: 'ServiceAccount', name: 'recon8s', namespace: NS };
const CHILD_VERBS = ['get', 'list', 'watch', 'create', 'patch', 'delete'];

function synth(props?: OperatorChartProps): RbacObject[] {
  const chart = new OperatorChart(new App(), 'operator', props);
  return Testing.synth(chart) as RbacObject[];
}
const find = (objects: readonly RbacObject[], kind: string, name: string, namespace?: string): RbacObject => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name && x.metadata.namespace === namespace);
  assert.ok(o, `${kind} ${namespace ? `${namespace}/` : ''}${name}`);
  return o;
};
const deploymentOf = (objects: readonly RbacObject[]): Deployment =>
  find(objects, 'Deployment', 'recon8s', NS) as unknown as Deployment;
const containerOf = (objects: readonly RbacObject[]): Container => {
  const c = deploymentOf(objects).spec.template.spec.containers[0];
  assert.ok(c);
  return c;
};
const rbac = (objects: readonly RbacObject[]): RbacObject[] =>
  objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role');
/** `group/resource` pairs a rule set grants `verb` on. */
const grants = (rules: readonly Rule[], verb: string): string[] =>
  rules
    .filter((r) => r.verbs.includes(verb))
    .flatMap((r) => (r.apiGroups ?? []).flatMap((g) => (r.resources ?? []).map((res) => `${g}/${res}`)))
    .sort();

describe('OperatorChart (the operator install construct)', () => {
  const objects = synth();

  describe('RBAC', () => {
    it('has no wildcard in any rule, and no non-resource URL', () => {
      const roles = rbac(objects);
      assert.equal(roles.length, 4);
      for (const role of roles) {
        for (const rule of role.rules ?? []) {
          for (const value of [
            ...(rule.apiGroups ?? []),
            ...(rule.resources ?? []),
            ...rule.verbs,
            ...(rule.resourceNames ?? []),
          ]) {
            assert.ok(!value.includes('*'), `${role.kind}/${role.metadata.name}: ${JSON.stringify(rule)}`);
          }
          assert.equal(rule.nonResourceURLs, undefined);
          assert.ok((rule.resources ?? []).length > 0 && rule.verbs.length > 0);
        }
      }
    });

    it('ClusterRole recon8s grants exactly these verbs, and no Secrets', () => {
      assert.deepEqual(find(objects, 'ClusterRole', 'recon8s').rules, [
        { apiGroups: ['recon8s.dev'], resources: ['apps', 'mysqlclusters'], verbs: ['get', 'list', 'watch', 'patch'] },
        { apiGroups: ['recon8s.dev'], resources: ['apps/status', 'mysqlclusters/status'], verbs: ['get', 'patch'] },
        { apiGroups: ['recon8s.dev'], resources: ['apps/finalizers', 'mysqlclusters/finalizers'], verbs: ['update'] },
        { apiGroups: ['apps'], resources: ['deployments', 'statefulsets'], verbs: CHILD_VERBS },
        { apiGroups: [''], resources: ['configmaps', 'services'], verbs: CHILD_VERBS },
        { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: CHILD_VERBS },
        { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: CHILD_VERBS },
        { apiGroups: ['batch'], resources: ['cronjobs'], verbs: CHILD_VERBS },
        { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: CHILD_VERBS },
        {
          apiGroups: [''],
          resources: ['persistentvolumeclaims'],
          verbs: ['get', 'list', 'patch', 'watch', 'delete'],
        },
        { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'patch', 'delete'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
        // spec.tls.issuerRef: the cluster's cert-manager Certificate, watched by name, never deleted.
        {
          apiGroups: ['cert-manager.io'],
          resources: ['certificates'],
          verbs: ['get', 'list', 'watch', 'create', 'patch'],
        },
      ]);
      assert.deepEqual(find(objects, 'ClusterRoleBinding', 'recon8s').roleRef, {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'recon8s',
      });
      assert.deepEqual(find(objects, 'ClusterRoleBinding', 'recon8s').subjects, [SA]);
    });

    it('covers exactly the kinds the controller owns and renders (lib/controller/kinds.ts)', () => {
      const rules = find(objects, 'ClusterRole', 'recon8s').rules ?? [];
      const children = [
        ...new Set(
          Object.values(CHILD_TYPES)
            .flat()
            .map((t) => `${t.apiVersion.includes('/') ? t.apiVersion.split('/')[0] : ''}/${t.plural}`),
        ),
      ].sort();
      assert.deepEqual(
        grants(rules, 'create').filter((g) => g !== '/events' && g !== 'cert-manager.io/certificates'),
        children,
        'create',
      );
      // Pods: never created; deleted one at a time to roll a MySQLCluster (its StatefulSet is OnDelete).
      // Claims: never created; a member's deleted only when it is lost with its node (docs/mysql-ha.md#node-loss).
      assert.deepEqual(grants(rules, 'delete'), [...children, '/persistentvolumeclaims', '/pods'].sort(), 'delete');
      // Pods: watched (the MySQL members' reports and readiness); a MySQLCluster's backup claim, by name.
      assert.deepEqual(
        grants(rules, 'watch'),
        [
          ...children,
          '/persistentvolumeclaims',
          '/pods',
          'cert-manager.io/certificates',
          ...OWNER_KINDS.map((k) => `${k.group}/${k.plural}`),
        ].sort(),
      );
      assert.deepEqual(grants(rules, 'update'), OWNER_KINDS.map((k) => `${k.group}/${k.plural}/finalizers`).sort());
    });

    it('grants Secrets only through recon8s-credentials (get, watch and create), bound in each credentials namespace', () => {
      for (const role of rbac(objects)) {
        if (role.metadata.name === 'recon8s-credentials') continue;
        for (const rule of role.rules ?? [])
          assert.ok(!(rule.resources ?? []).includes('secrets'), `${role.metadata.name} mentions secrets`);
      }
      assert.deepEqual(find(objects, 'ClusterRole', 'recon8s-credentials').rules, [
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
      ]);
      assert.deepEqual(
        objects.filter((o) => o.kind === 'RoleBinding' && o.roleRef?.name === 'recon8s-credentials'),
        [],
        'no grant unless asked',
      );

      const granted = synth({ credentialsNamespaces: ['shop', 'billing'] });
      const bindings = granted.filter((o) => o.kind === 'RoleBinding' && o.roleRef?.name === 'recon8s-credentials');
      assert.deepEqual(
        bindings.map((b) => b.metadata.namespace),
        ['shop', 'billing'],
      );
      for (const b of bindings) {
        assert.equal(b.metadata.name, 'recon8s-credentials');
        assert.deepEqual(b.roleRef, {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'recon8s-credentials',
        });
        assert.deepEqual(b.subjects, [SA]);
      }
      assert.ok(
        !granted.some((o) => o.kind === 'ClusterRoleBinding' && o.roleRef?.name === 'recon8s-credentials'),
        'never cluster-wide',
      );
    });

    it('with watchedNamespaces, binds the ClusterRole recon8s by a RoleBinding in each of them, and cluster-wide only the read of Nodes and PersistentVolumes', () => {
      const scoped = synth({ watchedNamespaces: ['shop', 'billing'], credentialsNamespaces: ['shop'] });
      assert.deepEqual(
        scoped.filter((o) => o.kind === 'ClusterRoleBinding').map((b) => b.roleRef?.name),
        ['recon8s-node-reader'],
        'one ClusterRoleBinding: the node reader',
      );
      assert.deepEqual(find(scoped, 'ClusterRoleBinding', 'recon8s-node-reader').subjects, [SA]);
      // Read-only, and only what has no namespace: get, never list or watch, on Nodes and PersistentVolumes.
      assert.deepEqual(find(scoped, 'ClusterRole', 'recon8s-node-reader').rules, [
        { apiGroups: [''], resources: ['nodes', 'persistentvolumes'], verbs: ['get'] },
      ]);
      const bindings = scoped.filter((o) => o.kind === 'RoleBinding' && o.roleRef?.name === 'recon8s');
      assert.deepEqual(
        bindings.map((b) => `${b.metadata.namespace ?? ''}/${b.metadata.name}`),
        ['shop/recon8s', 'billing/recon8s'],
      );
      for (const b of bindings) {
        assert.deepEqual(b.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'recon8s' });
        assert.deepEqual(b.subjects, [SA]);
      }
      // The same rules as the cluster-wide install: only where they apply differs.
      assert.deepEqual(find(scoped, 'ClusterRole', 'recon8s').rules, find(objects, 'ClusterRole', 'recon8s').rules);
      assert.deepEqual(
        scoped
          .filter((o) => o.kind === 'RoleBinding' && o.roleRef?.name === 'recon8s-credentials')
          .map((b) => b.metadata.namespace),
        ['shop'],
      );
      // Watching every namespace: one ClusterRoleBinding, no RoleBinding of the ClusterRole.
      assert.equal(objects.filter((o) => o.kind === 'RoleBinding' && o.roleRef?.name === 'recon8s').length, 0);
      find(objects, 'ClusterRoleBinding', 'recon8s');
    });

    it('fails on a credentials namespace that is not watched, naming it', () => {
      assert.throws(
        () => synth({ watchedNamespaces: ['shop'], credentialsNamespaces: ['shop', 'billing'] }),
        /credentialsNamespaces: "billing" is not one of watchedNamespaces \(shop\): the controller would hold Secrets of a namespace it never reconciles/,
      );
    });

    it('grants Leases only in the operator namespace, get and update only on its own Lease', () => {
      const role = find(objects, 'Role', 'recon8s-leader-election', NS);
      assert.deepEqual(role.rules, [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          resourceNames: ['recon8s-controller'],
          verbs: ['get', 'update'],
        },
      ]);
      const binding = find(objects, 'RoleBinding', 'recon8s-leader-election', NS);
      assert.deepEqual(binding.roleRef, {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: 'recon8s-leader-election',
      });
      assert.deepEqual(binding.subjects, [SA]);
      for (const role of objects.filter((o) => o.kind === 'ClusterRole'))
        assert.ok(!grants(role.rules ?? [], 'create').includes('coordination.k8s.io/leases'));
      // The Deployment names that Lease (and with the default name it is also the controller's default).
      assert.match(CONTROLLER_USAGE, new RegExp(`--leader-election-id NAME .*\\(default: ${LEADER_ELECTION_LEASE}\\)`));
      assert.ok(containerOf(objects).args?.includes(`--leader-election-id=${LEADER_ELECTION_LEASE}`));
    });

    it("docs/install.md's table of rights lists exactly what the install's roles grant", () => {
      const doc = readFileSync(new URL('../../docs/install.md', import.meta.url), 'utf8');
      const table = doc.slice(doc.indexOf('| role '));
      const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
      const list = (cell: string): string[] => cell.split(',').map((c) => c.trim().replaceAll('`', ''));
      const documented = rows.flatMap((row) => {
        const [role = '', group = '', resources = '', verbs = ''] = row.split('|').slice(1);
        const name = list(role)[0]?.replace(/ \(Role\)$/, '') ?? '';
        const g = group.trim() === 'core' ? '' : (list(group)[0] ?? '');
        return list(resources).flatMap((res) => list(verbs).map((v) => `${name} ${g}/${res} ${v}`));
      });
      const granted = rbac(objects).flatMap((role) =>
        (role.rules ?? []).flatMap((r) =>
          (r.apiGroups ?? []).flatMap((g) =>
            (r.resources ?? []).flatMap((res) => r.verbs.map((v) => `${role.metadata.name} ${g}/${res} ${v}`)),
          ),
        ),
      );
      assert.ok(documented.length > 20, rows.join('\n'));
      assert.deepEqual([...new Set(documented)].sort(), [...new Set(granted)].sort());
    });
  });

  describe('the Deployment', () => {
    it('runs 2 replicas of the image with leader election, POD_NAMESPACE from the downward API', () => {
      const d = deploymentOf(objects);
      assert.equal(d.spec.replicas, 2);
      const c = containerOf(objects);
      assert.equal(c.image, DEFAULT_OPERATOR_IMAGE);
      assert.deepEqual(c.args, [
        'controller',
        '--leader-elect',
        '--metrics-bind-address=:8080',
        '--health-probe-bind-address=:8081',
        '--leader-election-id=recon8s-controller',
        '--credentials-cluster-role=recon8s-credentials',
      ]);
      assert.deepEqual(c.env, [
        { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      ]);
      assert.deepEqual(d.spec.template.spec.serviceAccountName, 'recon8s');
      assert.equal(d.spec.template.spec.automountServiceAccountToken, true, 'the controller needs its token');
    });

    it('passes the Pod Security "restricted" profile: uid 65532, non-root, read-only root, no capabilities, RuntimeDefault seccomp', () => {
      const pod = deploymentOf(objects).spec.template.spec;
      assert.deepEqual(pod.securityContext, {
        runAsUser: 65532,
        runAsGroup: 65532,
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      assert.deepEqual(containerOf(objects).securityContext, {
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      // Read-only root, but a writable /tmp.
      assert.deepEqual(containerOf(objects).volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]);
      assert.deepEqual(pod.volumes, [{ name: 'tmp', emptyDir: {} }]);
    });

    it('probes /healthz (liveness) and /readyz (readiness) on the health port the controller binds', () => {
      const c = containerOf(objects);
      assert.deepEqual(c.ports, [
        { name: 'metrics', containerPort: 8080, protocol: 'TCP' },
        { name: 'health', containerPort: 8081, protocol: 'TCP' },
      ]);
      assert.deepEqual(c.livenessProbe?.httpGet, { path: '/healthz', port: 'health' });
      assert.deepEqual(c.readinessProbe?.httpGet, { path: '/readyz', port: 'health' });
    });

    it('requests resources, with a memory limit and no CPU limit', () => {
      const r = containerOf(objects).resources;
      assert.ok(r?.requests?.cpu && r.requests.memory, JSON.stringify(r));
      assert.ok(r.limits?.memory);
      assert.equal(r.limits.cpu, undefined);
    });

    it('has a PodDisruptionBudget and a metrics Service on port 8080 that select its pods', () => {
      const selector = deploymentOf(objects).spec.selector.matchLabels;
      const labels = deploymentOf(objects).spec.template.metadata.labels;
      for (const [k, v] of Object.entries(selector)) assert.equal(labels[k], v);
      const pdb = find(objects, 'PodDisruptionBudget', 'recon8s', NS) as unknown as {
        spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } };
      };
      assert.equal(pdb.spec.maxUnavailable, 1);
      assert.deepEqual(pdb.spec.selector.matchLabels, selector);
      const svc = find(objects, 'Service', 'recon8s-metrics', NS) as unknown as {
        spec: { selector: Record<string, string>; ports: unknown[] };
      };
      assert.deepEqual(svc.spec.selector, selector);
      assert.deepEqual(svc.spec.ports, [{ name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' }]);
      assert.ok(!synth({ replicas: 1 }).some((o) => o.kind === 'PodDisruptionBudget'), 'no budget for a single pod');
    });
  });

  describe('the install as a whole', () => {
    it('starts with the Namespace (restricted enforced) and the CRDs; namespaced objects name the namespace', () => {
      assert.deepEqual(
        objects.slice(0, 3).map((o) => `${o.kind}/${o.metadata.name}`),
        [
          `Namespace/${NS}`,
          'CustomResourceDefinition/apps.recon8s.dev',
          'CustomResourceDefinition/mysqlclusters.recon8s.dev',
        ],
      );
      assert.equal(objects[0]?.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
      const clusterScoped = new Set(['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding']);
      for (const o of objects)
        assert.equal(o.metadata.namespace, clusterScoped.has(o.kind) ? undefined : NS, `${o.kind}/${o.metadata.name}`);
    });

    it("labels nothing managed-by recon8s (the selector of the controller's own children)", () => {
      for (const o of objects)
        assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], undefined, `${o.kind}/${o.metadata.name}`);
    });

    it('takes the namespace, image and replicas from its props', () => {
      const custom = synth({
        namespace: 'ops',
        image: 'registry.example.com/recon8s:1.2.3',
        replicas: 3,
        credentialsNamespaces: ['shop'],
      });
      assert.ok(custom.some((o) => o.kind === 'Namespace' && o.metadata.name === 'ops'));
      const d = custom.find((o) => o.kind === 'Deployment') as unknown as Deployment;
      assert.equal(d.metadata.namespace, 'ops');
      assert.equal(d.spec.replicas, 3);
      assert.equal(d.spec.template.spec.containers[0]?.image, 'registry.example.com/recon8s:1.2.3');
      for (const o of custom.filter((x) => x.subjects)) assert.deepEqual(o.subjects, [{ ...SA, namespace: 'ops' }]);
    });

    it('defaults to the image of this package version', () => {
      const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version: string;
      };
      assert.equal(DEFAULT_OPERATOR_IMAGE, `ghcr.io/recon8s/recon8s:${version}`);
    });

    it('reads its props from the environment of cdk8s synth', () => {
      assert.deepEqual(operatorPropsFromEnv({}), {
        namespace: undefined,
        image: undefined,
        replicas: undefined,
        credentialsNamespaces: undefined,
        watchedNamespaces: undefined,
        appServiceAccounts: undefined,
        appSecrets: undefined,
      });
      assert.deepEqual(
        operatorPropsFromEnv({
          RECON8S_OPERATOR_NAMESPACE: 'ops',
          RECON8S_OPERATOR_IMAGE: 'x:1',
          RECON8S_OPERATOR_REPLICAS: '3',
          RECON8S_CREDENTIALS_NAMESPACES: ' shop, billing ,',
          RECON8S_WATCHED_NAMESPACES: 'shop',
        }),
        {
          namespace: 'ops',
          image: 'x:1',
          replicas: 3,
          credentialsNamespaces: ['shop', 'billing'],
          watchedNamespaces: ['shop'],
          appServiceAccounts: undefined,
          appSecrets: undefined,
        },
      );
    });

    it('adds the monitoring objects named in RECON8S_MONITORING, and refuses a name it does not know', () => {
      const props = operatorPropsFromEnv({ RECON8S_MONITORING: 'podMonitor, grafanaDashboard' });
      assert.deepEqual([props.podMonitor, props.grafanaDashboard, props.prometheusRule], [true, true, undefined]);
      assert.throws(
        () => operatorPropsFromEnv({ RECON8S_MONITORING: 'podMonitor,dashboards' }),
        /^Error: RECON8S_MONITORING: got "dashboards", expected a comma-separated list of serviceMonitor, podMonitor, prometheusRule, grafanaDashboard$/,
      );
    });

    it('creates no credentials namespace (kubectl delete -f must never delete one), and says which must exist first', () => {
      const granted = synth({ credentialsNamespaces: ['shop', 'billing'] });
      assert.deepEqual(
        granted.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name),
        [NS],
      );
      const header = installFileHeader({ credentialsNamespaces: ['shop', 'billing'] });
      assert.match(
        header.comment,
        /^# .*\n# Before `kubectl apply -f install\.yaml`, create .*\n# {3}kubectl create namespace shop billing\n/,
      );
      for (const line of header.comment.trimEnd().split('\n')) assert.match(line, /^# /, 'YAML comments only');
      assert.match(
        header.notice ?? '',
        /shop, billing: create them before applying it \(kubectl create namespace shop billing\)/,
      );
      assert.equal(installFileHeader({}).notice, undefined);
      // The watched namespaces too: the ClusterRole is bound there.
      assert.match(
        installFileHeader({ watchedNamespaces: ['shop', 'web'], credentialsNamespaces: ['shop'] }).comment,
        /\n# {3}kubectl create namespace shop web\n/,
      );
      assert.doesNotMatch(installFileHeader({}).comment, /create namespace/);
    });

    it("docs/install.md's install.yaml steps create the watched and credentials namespace before applying the file", () => {
      const doc = readFileSync(new URL('../../docs/install.md', import.meta.url), 'utf8');
      const section = doc.slice(doc.indexOf('## 2. One file, `dist/install.yaml`'));
      const block = (/```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '').split('\n');
      const at = (re: RegExp): number => block.findIndex((l) => re.test(l));
      const synthLine = at(/^RECON8S_WATCHED_NAMESPACES=shop RECON8S_CREDENTIALS_NAMESPACES=shop npm run synth/);
      const create = at(/^kubectl create namespace shop\b/);
      const apply = at(/^kubectl apply -f dist\/install\.yaml/);
      assert.ok(synthLine >= 0 && create >= 0 && apply >= 0, block.join('\n'));
      assert.ok(create < apply, `the namespace is created before the apply:\n${block.join('\n')}`);
    });

    it('fails on an invalid namespace, replicas or credentials namespace, naming each problem', () => {
      assert.throws(
        () => synth({ namespace: 'Recon8s', replicas: 0, credentialsNamespaces: ['shop', 'shop', 'a_b'] }),
        (e: unknown) => {
          const m = e instanceof Error ? e.message : '';
          assert.match(m, /namespace: got "Recon8s", expected a DNS label/);
          assert.match(m, /replicas: got 0, expected an integer of at least 1/);
          assert.match(m, /credentialsNamespaces: "shop" is listed twice/);
          assert.match(m, /credentialsNamespaces: got "a_b", expected a DNS label/);
          return true;
        },
      );
      assert.throws(() => synth({ replicas: Number('two') }), /replicas: got NaN/);
    });

    it('fails on bad watched namespaces and resources, naming the prop and the value', () => {
      assert.throws(
        () =>
          synth({
            watchedNamespaces: ['Shop'],
            resources: { requests: { cpu: 'lots' }, limits: { gpu: '1' } as never },
          }),
        (e: unknown) => {
          const m = e instanceof Error ? e.message : '';
          assert.match(m, /watchedNamespaces: got "Shop", expected a DNS label/);
          assert.match(m, /resources\.requests\.cpu: got "lots", expected a quantity/);
          assert.match(m, /resources\.limits: got "gpu", expected cpu or memory/);
          return true;
        },
      );
    });
  });

  describe('its other props', () => {
    const controller = (objects: readonly RbacObject[]) => {
      const d = objects.find((o) => o.kind === 'Deployment') as unknown as {
        spec: { template: { spec: { containers: { args: string[]; resources: unknown; imagePullPolicy: string }[] } } };
      };
      const c = d.spec.template.spec.containers[0];
      assert.ok(c);
      return c;
    };

    it("watches only the namespaces given (the controller's --namespaces), all by default", () => {
      const own = [`--leader-election-id=${LEADER_ELECTION_LEASE}`, '--credentials-cluster-role=recon8s-credentials'];
      assert.deepEqual(controller(synth()).args, [...CONTROLLER_ARGS, ...own]);
      assert.deepEqual(controller(synth({ watchedNamespaces: ['shop', 'billing'] })).args, [
        ...CONTROLLER_ARGS,
        ...own,
        '--namespaces=shop,billing',
      ]);
      assert.match(CONTROLLER_USAGE, /--namespaces NS\[,NS\.\.\.\]/);
    });

    it("restricts what an App may name with the controller's --app-service-accounts and --app-secrets, nothing by default", () => {
      const own = [`--leader-election-id=${LEADER_ELECTION_LEASE}`, '--credentials-cluster-role=recon8s-credentials'];
      assert.deepEqual(controller(synth({ appServiceAccounts: ['*'], appSecrets: ['*'] })).args, [
        ...CONTROLLER_ARGS,
        ...own,
      ]);
      assert.deepEqual(
        controller(synth({ appServiceAccounts: ['web', 'billing/*'], appSecrets: [], watchedNamespaces: ['shop'] }))
          .args,
        [...CONTROLLER_ARGS, ...own, '--app-service-accounts=web,billing/*', '--app-secrets=', '--namespaces=shop'],
      );
      assert.match(CONTROLLER_USAGE, /--app-service-accounts LIST /);
      assert.match(CONTROLLER_USAGE, /--app-secrets LIST /);
      // From the environment of `npm run synth`: set but empty is the empty list (none), unset the default (any).
      assert.deepEqual(operatorPropsFromEnv({ RECON8S_APP_SERVICE_ACCOUNTS: 'web, shop/*', RECON8S_APP_SECRETS: '' }), {
        ...operatorPropsFromEnv({}),
        appServiceAccounts: ['web', 'shop/*'],
        appSecrets: [],
      });
      assert.equal(operatorPropsFromEnv({}).appSecrets, undefined);
    });

    it('fails on an App allow-list entry it cannot read, naming the prop and the value', () => {
      assert.throws(
        () => synth({ appServiceAccounts: ['Admin'], appSecrets: ['shop/web', '*/x'] }),
        (e: Error) =>
          /appServiceAccounts: "Admin" is not an allow-list entry: expected "\*", "NAMESPACE\/\*", "NAME" or "NAMESPACE\/NAME"/.test(
            e.message,
          ) && /appSecrets: "\*\/x" is not an allow-list entry/.test(e.message),
      );
    });

    it("sets the controller's resources and pull policy", () => {
      assert.deepEqual(controller(synth()).resources, {
        requests: { cpu: '100m', memory: '256Mi' },
        limits: { memory: '512Mi' },
      });
      const c = controller(
        synth({
          resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } },
          imagePullPolicy: 'Always',
        }),
      );
      assert.deepEqual(c.resources, { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } });
      assert.equal(c.imagePullPolicy, 'Always');
    });

    it('adds a ServiceMonitor for the metrics Service only when asked', () => {
      assert.equal(
        synth().some((o) => o.kind === 'ServiceMonitor'),
        false,
      );
      const monitor = synth({ serviceMonitor: true, namespace: 'ops' }).find(
        (o) => o.kind === 'ServiceMonitor',
      ) as unknown as
        | { apiVersion: string; metadata: { namespace: string }; spec: { selector: unknown; endpoints: unknown[] } }
        | undefined;
      assert.ok(monitor);
      assert.equal(monitor.apiVersion, 'monitoring.coreos.com/v1');
      assert.equal(monitor.metadata.namespace, 'ops');
      const service = synth({ namespace: 'ops' }).find((o) => o.kind === 'Service') as unknown as {
        metadata: { labels: Record<string, string> };
        spec: { ports: { name: string }[] };
      };
      const matchLabels = (monitor.spec.selector as { matchLabels: Record<string, string> }).matchLabels;
      for (const [k, v] of Object.entries(matchLabels))
        assert.equal(service.metadata.labels[k], v, `the metrics Service carries ${k}=${v}`);
      assert.deepEqual(monitor.spec.endpoints, [
        { port: service.spec.ports[0]?.name, path: '/metrics', interval: '30s' },
      ]);
    });

    it('names every object of a second install apart from the first: name for namespaced ones, clusterScopedName for the rest', () => {
      const first = synth({ credentialsNamespaces: ['shop'], serviceMonitor: true });
      const second = synth({
        name: 'team-a',
        clusterScopedName: 'ops:team-a',
        createNamespace: false,
        namespace: NS,
        credentialsNamespaces: ['shop'],
        serviceMonitor: true,
      });
      const ids = (objects: readonly RbacObject[]): Set<string> =>
        new Set(
          objects
            .filter((o) => o.kind !== 'CustomResourceDefinition')
            .map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`),
        );
      const shared = [...ids(second)].filter((id) => ids(first).has(id));
      assert.deepEqual(shared, [], 'same namespace, yet no object in common but the CRDs');
      assert.ok(!second.some((o) => o.kind === 'Namespace'), 'createNamespace: false');

      const sa = { kind: 'ServiceAccount', name: 'team-a', namespace: NS };
      assert.deepEqual(find(second, 'ClusterRoleBinding', 'ops:team-a').subjects, [sa]);
      assert.equal(find(second, 'ClusterRoleBinding', 'ops:team-a').roleRef?.name, 'ops:team-a');
      assert.equal(
        find(second, 'RoleBinding', 'ops:team-a-credentials', 'shop').roleRef?.name,
        'ops:team-a-credentials',
      );
      assert.deepEqual(find(second, 'Role', 'team-a-leader-election', NS).rules?.[1]?.resourceNames, [
        'team-a-controller',
      ]);
      find(second, 'Service', 'team-a-metrics', NS);
      const d = find(second, 'Deployment', 'team-a', NS) as unknown as Deployment;
      assert.equal(d.spec.template.spec.serviceAccountName, 'team-a');
      assert.equal(d.spec.selector.matchLabels['app.kubernetes.io/instance'], 'team-a');
      const args = d.spec.template.spec.containers[0]?.args ?? [];
      assert.ok(args.includes('--leader-election-id=team-a-controller'), args.join(' '));
      // CredentialsForbidden names the ClusterRole of this install, the one its RoleBindings bind.
      assert.ok(args.includes('--credentials-cluster-role=ops:team-a-credentials'), args.join(' '));
      assert.match(CONTROLLER_USAGE, /--credentials-cluster-role NAME .*\(default: recon8s-credentials\)/);
      // The default install keeps its names (and its Deployment's immutable selector).
      assert.equal(deploymentOf(first).spec.selector.matchLabels['app.kubernetes.io/instance'], 'recon8s');
    });

    it('schedules the controller with the nodeSelector, tolerations, imagePullSecrets and affinity given', () => {
      const pod = (props?: OperatorChartProps): Record<string, unknown> =>
        deploymentOf(synth(props)).spec.template.spec as unknown as Record<string, unknown>;
      const plain = pod();
      for (const field of ['nodeSelector', 'tolerations', 'imagePullSecrets'])
        assert.equal(plain[field], undefined, `no ${field} by default`);
      assert.ok(plain.affinity, 'the anti-affinity by default with 2 replicas');
      const affinity = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['ops'] }] }],
          },
        },
      };
      const custom = pod({
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [
          { key: 'dedicated', operator: 'Equal', value: 'ops', effect: 'NoSchedule' },
          { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
        ],
        imagePullSecrets: ['registry', 'mirror'],
        affinity,
      });
      assert.deepEqual(custom.nodeSelector, { 'kubernetes.io/os': 'linux' });
      assert.deepEqual(custom.tolerations, [
        { key: 'dedicated', operator: 'Equal', value: 'ops', effect: 'NoSchedule' },
        { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
      ]);
      assert.deepEqual(custom.imagePullSecrets, [{ name: 'registry' }, { name: 'mirror' }]);
      assert.deepEqual(custom.affinity, affinity, 'replaces the default anti-affinity');
    });

    it('fails on a bad name, clusterScopedName, nodeSelector, toleration or image pull Secret, naming the field, the value and what was expected', () => {
      assert.throws(
        () =>
          synth({
            name: 'Team_A',
            clusterScopedName: 'ops/team',
            nodeSelector: { 'bad key!': 'x', pool: 'not a value' },
            tolerations: [
              { key: 'a', operator: 'Like' },
              { value: 'x' },
              { key: 'b', operator: 'Exists', value: 'y', effect: 'Never' },
              { key: 'c', effect: 'NoSchedule', tolerationSeconds: 5 },
            ],
            imagePullSecrets: ['Registry', 'ok', 'ok'],
          }),
        (e: unknown) => {
          const m = e instanceof Error ? e.message : '';
          for (const expected of [
            /name: got "Team_A", expected a DNS label of at most 55 characters/,
            /clusterScopedName: got "ops\/team", expected at most 200 lowercase letters, digits, "-", "\." or ":"/,
            /nodeSelector: got key "bad key!", expected a label key/,
            /nodeSelector\.pool: got "not a value", expected a label value/,
            /tolerations\[0\]\.operator: got "Like", expected Exists or Equal/,
            /tolerations\[1\]\.operator: got "Equal" with no key, expected Exists/,
            /tolerations\[2\]\.value: got "y" with operator Exists, expected none/,
            /tolerations\[2\]\.effect: got "Never", expected NoSchedule, PreferNoSchedule or NoExecute/,
            /tolerations\[3\]\.tolerationSeconds: got 5 with effect "NoSchedule", expected it only with NoExecute/,
            /imagePullSecrets: got "Registry", expected a Secret name/,
            /imagePullSecrets: "ok" is listed twice/,
          ])
            assert.match(m, expected);
          return true;
        },
      );
      assert.throws(() => synth({ name: 'a'.repeat(56) }), /name: got "a{56}", expected a DNS label of at most 55/);
    });
  });
});

describe('the shipped alert rules (Recon8sAlertRules)', () => {
  it('renders a PrometheusRule with every alert, each with a severity and a runbook section of docs/monitoring.md', () => {
    const chart = new Chart(new App(), 'alerts', { namespace: 'monitoring' });
    new Recon8sAlertRules(chart, 'alerts', { labels: { release: 'prometheus' } });
    const [rule] = Testing.synth(chart) as {
      kind: string;
      metadata: { name: string; namespace: string; labels: Record<string, string> };
      spec: { groups: { rules: AlertRule[] }[] };
    }[];
    assert.equal(rule?.kind, 'PrometheusRule');
    assert.equal(rule?.metadata.namespace, 'monitoring');
    assert.equal(rule?.metadata.labels.release, 'prometheus');
    const rules = rule?.spec.groups[0]?.rules ?? [];
    assert.deepEqual(rules, alertRules());
    const doc = readFileSync(new URL('../../docs/monitoring.md', import.meta.url), 'utf8');
    for (const r of rules) {
      assert.match(r.labels.severity, /^(critical|warning|info)$/);
      assert.equal(
        r.annotations.runbook,
        `https://github.com/recon8s/recon8s/blob/main/docs/monitoring.md#${r.alert.toLowerCase()}`,
      );
      assert.match(
        doc,
        new RegExp(`^#### ${r.alert}$`, 'm'),
        `docs/monitoring.md has no runbook section for ${r.alert}`,
      );
    }
  });

  it('takes its thresholds, and refuses one that is not a positive number, naming it', () => {
    assert.match(
      alertRules({ replicaLagTransactions: 50 }).find((r) => r.alert === 'Recon8sMySQLReplicaLagging')?.expr ?? '',
      /> 50$/,
    );
    assert.throws(
      () => alertRules({ backupAgeMarginMinutes: 0, replicaLagTransactions: 1.5 }),
      (e: Error) =>
        /replicaLagTransactions: got 1\.5, expected a positive integer/.test(e.message) &&
        /backupAgeMarginMinutes: got 0, expected a positive number/.test(e.message),
    );
  });

  it('is in the operator install only when asked (prometheusRule), named after the install', () => {
    const kinds = (props: OperatorChartProps) =>
      (
        Testing.synth(new OperatorChart(new App(), 'install', props)) as {
          kind: string;
          metadata: { name: string };
        }[]
      )
        .filter((o) => o.kind === 'PrometheusRule')
        .map((o) => o.metadata.name);
    assert.deepEqual(kinds({}), []);
    assert.deepEqual(kinds({ prometheusRule: true }), ['recon8s-alerts']);
    assert.deepEqual(kinds({ prometheusRule: true, name: 'ops' }), ['ops-alerts']);
  });

  it('has the PodMonitor and the Grafana dashboard ConfigMap only when asked, in the install namespace', () => {
    const objects = (props: OperatorChartProps) =>
      (
        Testing.synth(new OperatorChart(new App(), 'install', props)) as {
          kind: string;
          metadata: { name: string; namespace?: string; labels?: Record<string, string> };
        }[]
      )
        .filter((o) => o.kind === 'PodMonitor' || o.metadata.labels?.grafana_dashboard === '1')
        .map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`);
    assert.deepEqual(objects({}), []);
    assert.deepEqual(objects({ podMonitor: true, grafanaDashboard: true, namespace: 'ops' }), [
      'PodMonitor/ops/recon8s-mysql',
      'ConfigMap/ops/recon8s-dashboard',
    ]);
  });
});
