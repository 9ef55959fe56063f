// The operator's install as a construct: `new recon8s.OperatorChart(app, 'recon8s', {...})` in a cdk8s
// app, `dist/install.yaml` from `npm run synth`, and the Helm chart (apps/helm-chart.ts) all come from it.
//
// One chart, its objects in dependency order (cdk8s writes them in construct order, one file per
// chart): the Namespace, the CRDs, the ServiceAccount, RBAC, then the workload. kubectl applies the
// documents of a file in order, so the Namespace and the CRDs exist before anything that needs them.
//
// Several installs in one cluster (Helm releases, or two charts): each has its own `name` (every
// namespaced object, the pods' instance label, the Lease) and `clusterScopedName` (the ClusterRoles and
// their bindings), so nothing of one is an object of the other; the CRDs are the one thing they share.
// Each must watch its own namespaces (`watchedNamespaces`, disjoint): two controllers watching one
// namespace would both apply and prune the same children.
//
// RBAC is the narrowest that works, and has no wildcard anywhere. Where it applies: with
// `watchedNamespaces`, the ClusterRole below is bound by a RoleBinding in each watched namespace and
// nowhere else (the controller then lists and watches namespace by namespace; lib/ asks who it is with
// a SelfSubjectReview, which every authenticated identity may); without it, one ClusterRoleBinding
// grants it in every namespace. The one cluster-scoped grant either way: `get` of a named Node or
// PersistentVolume (the node-reader role), to judge a member lost with its node.
// docs/install.md lists every right (a unit test compares its table with these objects). The rules
// follow what lib/controller does (`get` on the children and on /status is not used today — informers
// list and watch — but it reveals nothing list does not, and keeps a direct read from becoming a 403):
// - informers list+watch App and MySQLCluster and every child kind (each KindDefinition's childTypes);
//   a resource is read live (get) before missing children are created for it;
// - the reconciler server-side-applies the ApplySet parent labels on the resource (patch), writes
//   `/status` (patch), applies children (patch; an apply that creates is also authorised as create),
//   prunes them (delete) and reads PersistentVolumeClaims (get, never pruned, never written);
// - children carry ownerReferences with blockOwnerDeletion: where the OwnerReferencesPermissionEnforcement
//   admission plugin runs (OpenShift, hardened clusters), setting it needs `update` on the owner's
//   `/finalizers`;
// - Events: core v1 create (it never patches one: repeats are dropped in memory);
// - Secrets: only the credentials of a MySQLCluster, get and create, and only in the namespaces given
//   in `credentialsNamespaces` (a RoleBinding to the ClusterRole `recon8s-credentials` each); patch
//   only to move the ownerReference of a Secret it generated when the retention policy changes (the
//   code never patches data: a password is written once); list/watch there only to watch each Secret
//   a MySQLCluster names, by name (never a cache of every Secret), never update/delete. Elsewhere the controller reports the condition Degraded/CredentialsForbidden.
// - leader election: a Lease in the operator's namespace only (Role, not ClusterRole).
//
// The Deployment is the L1 `k8s.KubeDeployment`, not our `App` construct: the App spec cannot express
// an environment variable from the downward API (`env[].valueFrom.fieldRef`), and the controller needs
// POD_NAMESPACE for its leader-election namespace. (App would also label the operator's own objects
// `app.kubernetes.io/managed-by: recon8s` — the selector of the controller's child informers — and
// expose every container port, health included, on its Service.) The restricted security context and
// the anti-affinity come from the same helpers the App construct uses.
import { ApiObject, Chart } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import { selectorLabels } from '../common/metadata.js';
import { containerSecurityContext, podSecurityContext, preferredAntiAffinity } from '../common/security.js';
import { ALLOW_ANY, allowListProblems, allowsAny } from '../app/reference-allow-list.js';
import { Recon8sCrds } from '../crd.js';
import { MySQLPodMonitor } from '../mysql/exporter.js';
import { Recon8sAlertRules } from './alert-rules.js';
import { Recon8sDashboard } from './dashboard.js';
import { KINDS } from '../render.js';
import type { KindDefinition } from '../schema/schema.js';
import { QUALIFIED_KEY_PATTERN } from '../schema/schema.js';

import { DEFAULT_OPERATOR_IMAGE } from '../common/operator-image.js';
import { DEFAULT_OPERATOR_NAMESPACE } from '../common/operator-install.js';

export { DEFAULT_OPERATOR_IMAGE, DEFAULT_OPERATOR_NAMESPACE };
export const DEFAULT_OPERATOR_REPLICAS = 2;

/** The default install name: the ServiceAccount, ClusterRole(Binding) and Deployment name. */
export const OPERATOR_NAME = 'recon8s';
/** The ClusterRole granting the Secrets credentials need, bound per namespace (default install). */
export const CREDENTIALS_CLUSTER_ROLE = operatorNames().credentialsRole;
/** The Role (and RoleBinding) for leader election in the operator namespace (default install). */
export const LEADER_ELECTION_ROLE = operatorNames().leaderElectionRole;
/** The Lease the controller elects its leader on (default install; also the controller's default `--leader-election-id`). */
export const LEADER_ELECTION_LEASE = operatorNames().leaderElectionLease;
export const METRICS_SERVICE = operatorNames().metricsService;

/** The names of one install's objects, from its `name` and `clusterScopedName`. */
export interface OperatorNames {
  /** The ServiceAccount, Deployment, PodDisruptionBudget and ServiceMonitor; the pods' instance label. */
  readonly name: string;
  readonly metricsService: string;
  readonly leaderElectionRole: string;
  readonly leaderElectionLease: string;
  /** The ClusterRole, and its ClusterRoleBinding or its RoleBinding in each watched namespace. */
  readonly clusterRole: string;
  /** The ClusterRole granting Secrets, and its RoleBinding in each credentials namespace. */
  readonly credentialsRole: string;
  /** The read-only ClusterRole on Nodes and PersistentVolumes (cluster-scoped), and its ClusterRoleBinding. */
  readonly nodeReaderRole: string;
}

/** With the defaults: recon8s, recon8s-metrics, recon8s-credentials, ... (the constants above). */
export function operatorNames(name: string = OPERATOR_NAME, clusterScopedName: string = name): OperatorNames {
  return {
    name,
    metricsService: `${name}-metrics`,
    leaderElectionRole: `${name}-leader-election`,
    leaderElectionLease: `${name}-controller`,
    clusterRole: clusterScopedName,
    credentialsRole: `${clusterScopedName}-credentials`,
    nodeReaderRole: `${clusterScopedName}-node-reader`,
  };
}
export const METRICS_PORT = 8080;
export const HEALTH_PORT = 8081;
/** The non-root uid and gid the controller runs as (distroless "nonroot"). */
export const OPERATOR_UID = 65532;

export const CONTROLLER_ARGS: readonly string[] = [
  'controller',
  '--leader-elect',
  `--metrics-bind-address=:${METRICS_PORT}`,
  `--health-probe-bind-address=:${HEALTH_PORT}`,
];

/** Verbs on the children the constructs render: watched, server-side-applied (create+patch) and pruned. */
export const CHILD_VERBS: readonly string[] = ['get', 'list', 'watch', 'create', 'patch', 'delete'];

/** One rule per API group for every kind's childTypes: groups in order of first appearance, resources sorted. */
export function childRules(kinds: readonly KindDefinition[]): k8s.PolicyRule[] {
  const byGroup = new Map<string, Set<string>>();
  for (const t of kinds.flatMap((k) => k.childTypes)) {
    const group = t.apiVersion.includes('/') ? (t.apiVersion.split('/')[0] ?? '') : '';
    byGroup.set(group, (byGroup.get(group) ?? new Set()).add(t.plural));
  }
  return [...byGroup].map(([group, resources]) => ({
    apiGroups: [group],
    resources: [...resources].sort(),
    verbs: [...CHILD_VERBS],
  }));
}

export interface OperatorChartProps {
  /** The namespace the controller runs in (and holds its Lease in). @default "recon8s-system" */
  readonly namespace?: string;
  /**
   * Whether the install creates its namespace, labelled to enforce Pod Security "restricted". False when
   * something else creates it (Helm's `--create-namespace`, your own Namespace object).
   * @default true
   */
  readonly createNamespace?: boolean;
  /**
   * The install's name: its ServiceAccount, Deployment, PodDisruptionBudget and ServiceMonitor, the
   * metrics Service `<name>-metrics`, the Role `<name>-leader-election` and the Lease
   * `<name>-controller`; also the pods' `app.kubernetes.io/instance` label (a Deployment's selector
   * cannot change: keep the name). Two installs in one namespace need two names.
   * @default "recon8s"
   */
  readonly name?: string;
  /**
   * The name of the install's ClusterRole and ClusterRoleBinding, and the stem of the ClusterRole
   * granting Secrets and of its RoleBindings (`<clusterScopedName>-credentials`). Cluster-scoped names
   * are shared by every namespace: two installs in one cluster need two, e.g. `<namespace>:<name>`.
   * @default the `name`
   */
  readonly clusterScopedName?: string;
  /** @default "ghcr.io/recon8s/recon8s:0.1.0" */
  readonly image?: string;
  /** Controller pods; one leads at a time (Lease), the others wait with a warm cache. @default 2 */
  readonly replicas?: number;
  /**
   * Namespaces where the controller may read and create MySQLCluster credentials Secrets (get and
   * create, nothing else). Each must exist before the install is applied. Elsewhere a MySQLCluster
   * gets the condition Degraded with reason CredentialsForbidden until the grant is made.
   * @default none
   */
  readonly credentialsNamespaces?: readonly string[];
  /**
   * Namespaces the controller watches (its `--namespaces`); App and MySQLCluster resources elsewhere
   * are left alone. Its rights are then granted there and nowhere else: the ClusterRole is bound by a
   * RoleBinding in each of them (so each must exist before the install is applied), and there is no
   * ClusterRoleBinding. Every credentials namespace must be one of them.
   * @default all namespaces, through a ClusterRoleBinding
   */
  readonly watchedNamespaces?: readonly string[];
  /**
   * The ServiceAccounts an App may run as (`spec.serviceAccountName`), an allow-list of `*` (any),
   * `NAMESPACE/*`, `NAME` (in every namespace) or `NAMESPACE/NAME`; `[]`: only the namespace default.
   * An App naming another is refused (Degraded/ReferenceNotAllowed, a Warning Event) and nothing of it
   * is applied. Without a restriction, creating an App grants what creating a pod grants.
   * @default ["*"]: any ServiceAccount of the App's namespace
   */
  readonly appServiceAccounts?: readonly string[];
  /**
   * The Secrets an App's pods may name (`env[].valueFrom.secretKeyRef`, `imagePullSecrets`, and any
   * other reference in the pod template), likewise; `[]`: none but the App's own database binding,
   * which is always allowed.
   * @default ["*"]: any Secret of the App's namespace
   */
  readonly appSecrets?: readonly string[];
  /**
   * The controller container's resources. No CPU limit by default: it throttles without protecting anything.
   * @default requests cpu 100m, memory 256Mi; limits memory 512Mi
   */
  readonly resources?: OperatorResources;
  /** @default "IfNotPresent" */
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Secrets (in the operator namespace) the kubelet pulls the image with, by name. @default none */
  readonly imagePullSecrets?: readonly string[];
  /** Node labels the controller pods require. @default none */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /** Taints the controller pods tolerate, as in a PodSpec. @default none */
  readonly tolerations?: readonly k8s.Toleration[];
  /**
   * The controller pods' affinity, as in a PodSpec; replaces the default.
   * @default with more than one replica, a preferred anti-affinity that spreads the pods across nodes; none with one
   */
  readonly affinity?: k8s.Affinity;
  /**
   * A Prometheus Operator ServiceMonitor (monitoring.coreos.com/v1) for the metrics Service, scraped
   * every 30 s. Its CRD must exist in the cluster.
   * @default false
   */
  readonly serviceMonitor?: boolean;
  /**
   * A Prometheus Operator PrometheusRule with the alerts recon8s ships (Recon8sAlertRules: a primary
   * unreachable, a failover, errant members, lag, backups failing or too old, the binary-log archive
   * behind, anything Degraded, no controller leading). Its CRD must exist in the cluster.
   * @default false
   */
  readonly prometheusRule?: boolean;
  /**
   * A Prometheus Operator PodMonitor scraping the metrics sidecar of every MySQLCluster member that has
   * `spec.monitoring.enabled`, in every namespace (MySQLPodMonitor). Its CRD must exist in the cluster.
   * @default false
   */
  readonly podMonitor?: boolean;
  /**
   * The Grafana dashboard (Recon8sDashboard) in a ConfigMap labelled `grafana_dashboard: "1"`, which
   * Grafana's dashboard sidecar picks up (it must watch the install's namespace).
   * @default false
   */
  readonly grafanaDashboard?: boolean;
}

/** Container resources, as quantities ("100m", "256Mi"). */
export interface OperatorResources {
  readonly requests?: { readonly cpu?: string; readonly memory?: string };
  readonly limits?: { readonly cpu?: string; readonly memory?: string };
}

export const DEFAULT_OPERATOR_RESOURCES: OperatorResources = {
  requests: { cpu: '100m', memory: '256Mi' },
  limits: { memory: '512Mi' },
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** RBAC names are path segments; ":" is Kubernetes' own separator in them (system:controller:...). */
const RBAC_NAME = /^[a-z0-9]([-a-z0-9.:]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_KEY = new RegExp(QUALIFIED_KEY_PATTERN);
/** `<name>-metrics` is a Service name: a DNS label of at most 63 characters. */
const MAX_NAME_LENGTH = 63 - '-metrics'.length;
const TOLERATION_OPERATORS: readonly string[] = ['Exists', 'Equal'];
const TAINT_EFFECTS: readonly string[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/**
 * The operator's install: Namespace (Pod Security "restricted" enforced), the CRDs, a ServiceAccount,
 * least-privilege RBAC, and the controller Deployment with its PodDisruptionBudget and metrics Service.
 */
export class OperatorChart extends Chart {
  readonly operatorNamespace: string;
  readonly names: OperatorNames;
  /** Absent when `createNamespace` is false. */
  readonly namespaceObject?: k8s.KubeNamespace;
  readonly crds: Recon8sCrds;
  readonly serviceAccount: k8s.KubeServiceAccount;
  readonly clusterRole: k8s.KubeClusterRole;
  /** Without `watchedNamespaces`: the ClusterRole granted in every namespace. */
  readonly clusterRoleBinding?: k8s.KubeClusterRoleBinding;
  /** With `watchedNamespaces`: the ClusterRole granted in each of them, and only there. */
  readonly watchedBindings: readonly k8s.KubeRoleBinding[];
  readonly credentialsRole: k8s.KubeClusterRole;
  /** Get on Nodes and PersistentVolumes, bound cluster-wide (they have no namespace), even with `watchedNamespaces`. */
  readonly nodeReaderRole: k8s.KubeClusterRole;
  readonly leaderElectionRole: k8s.KubeRole;
  readonly credentialsBindings: readonly k8s.KubeRoleBinding[];
  readonly deployment: k8s.KubeDeployment;
  readonly disruptionBudget?: k8s.KubePodDisruptionBudget;
  readonly metricsService: k8s.KubeService;
  readonly serviceMonitor?: ApiObject;
  /** Present when `prometheusRule` is true. */
  readonly alertRules?: Recon8sAlertRules;
  /** Present when `podMonitor` is true. */
  readonly podMonitor?: MySQLPodMonitor;
  /** Present when `grafanaDashboard` is true. */
  readonly dashboard?: Recon8sDashboard;

  constructor(scope: Construct, id: string, props: OperatorChartProps = {}) {
    const namespace = props.namespace ?? DEFAULT_OPERATOR_NAMESPACE;
    const image = props.image ?? DEFAULT_OPERATOR_IMAGE;
    const replicas = props.replicas ?? DEFAULT_OPERATOR_REPLICAS;
    const credentialsNamespaces = [...(props.credentialsNamespaces ?? [])];
    const watchedNamespaces = [...(props.watchedNamespaces ?? [])];
    const resources = props.resources ?? DEFAULT_OPERATOR_RESOURCES;
    const name = props.name ?? OPERATOR_NAME;
    const clusterScopedName = props.clusterScopedName ?? name;
    const imagePullSecrets = [...(props.imagePullSecrets ?? [])];
    const nodeSelector = { ...(props.nodeSelector ?? {}) };
    const tolerations = [...(props.tolerations ?? [])];
    const appServiceAccounts = [...(props.appServiceAccounts ?? ALLOW_ANY)];
    const appSecrets = [...(props.appSecrets ?? ALLOW_ANY)];
    validate({
      appServiceAccounts,
      appSecrets,
      namespace,
      name,
      clusterScopedName,
      image,
      replicas,
      credentialsNamespaces,
      watchedNamespaces,
      resources,
      imagePullSecrets,
      nodeSelector,
      tolerations,
    });
    // No chart-wide namespace: cluster-scoped objects (Namespace, CRDs, ClusterRoles) must not carry one.
    super(scope, id, { disableResourceNameHashes: true });
    this.operatorNamespace = namespace;
    const names = operatorNames(name, clusterScopedName);
    this.names = names;

    const selector = selectorLabels({ name: OPERATOR_NAME, instance: name, component: 'controller' });
    // Not app.kubernetes.io/managed-by=recon8s: that label selects the controller's own children.
    const labels = { ...selector, 'app.kubernetes.io/part-of': 'recon8s' };
    const partOf = { 'app.kubernetes.io/part-of': 'recon8s' };
    const subject: k8s.Subject = { kind: 'ServiceAccount', name, namespace };

    // --- Namespace and CRDs: first, everything else needs them. ---
    if (props.createNamespace ?? true) {
      this.namespaceObject = new k8s.KubeNamespace(this, 'namespace', {
        metadata: {
          name: namespace,
          labels: {
            ...partOf,
            'pod-security.kubernetes.io/enforce': 'restricted',
            'pod-security.kubernetes.io/enforce-version': 'latest',
            'pod-security.kubernetes.io/warn': 'restricted',
            'pod-security.kubernetes.io/audit': 'restricted',
          },
        },
      });
    }
    this.crds = new Recon8sCrds(this, 'crds');

    this.serviceAccount = new k8s.KubeServiceAccount(this, 'service-account', {
      metadata: { name, namespace, labels },
    });

    // --- The custom resources, their children, PVC reads, Events (no Secrets): where they are bound, below. ---
    const owners = KINDS.map((k) => k.plural);
    const group = KINDS[0]?.group ?? 'recon8s.dev';
    this.clusterRole = new k8s.KubeClusterRole(this, 'cluster-role', {
      metadata: { name: names.clusterRole, labels },
      rules: [
        // Read the resources; patch = server-side apply of the ApplySet parent labels (never create or delete them).
        { apiGroups: [group], resources: owners, verbs: ['get', 'list', 'watch', 'patch'] },
        { apiGroups: [group], resources: owners.map((p) => `${p}/status`), verbs: ['get', 'patch'] },
        // blockOwnerDeletion on the children's ownerReferences (OwnerReferencesPermissionEnforcement).
        { apiGroups: [group], resources: owners.map((p) => `${p}/finalizers`), verbs: ['update'] },
        // The children render() produces (each kind's childTypes), by API group.
        ...childRules(KINDS),
        // get: is there data from an earlier cluster of that name (before generating passwords)? And a
        // member's data claim while a member is unwell (its volume may be bound to a lost node).
        // patch: grow the claims when a MySQLCluster's storage.size grows. list, watch: the backup volume
        // a MySQLCluster names, watched by its name alone (a field selector). delete: only the data claim
        // of a member lost with its node, bound to that node, once the node is known to be down
        // (docs/mysql-ha.md#node-loss), with a precondition on its uid. Never created.
        {
          apiGroups: [''],
          resources: ['persistentvolumeclaims'],
          verbs: ['get', 'list', 'patch', 'watch', 'delete'],
        },
        // Pods: the recon8s-labelled ones watched for why they cannot run (named in status), MySQL's
        // also for what their containers report on termination (lib/controller/mysql-cluster/member-reports.ts)
        // and for readiness; MySQL's patched to move the role label the Services select by, and deleted
        // one at a time in a rolling update (the StatefulSet is OnDelete). No get of one pod, no exec, no logs.
        { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'patch', 'delete'] },
        // Core v1 Events, created only: repeats are deduplicated in memory (lib/controller/events.ts), never patched.
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
        // A MySQLCluster with spec.tls.issuerRef: its cert-manager Certificate, created or changed by server-side
        // apply (lib/controller/mysql-cluster/tls.ts) and watched by name once it exists (secret-cache.ts), never
        // deleted (it goes with the cluster, by its ownerReference). Harmless where cert-manager is absent.
        {
          apiGroups: ['cert-manager.io'],
          resources: ['certificates'],
          verbs: ['get', 'list', 'watch', 'create', 'patch'],
        },
      ],
    });
    // Granted where the controller works: in each watched namespace, or (watching all) everywhere.
    const roleRef = { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: names.clusterRole };
    this.watchedBindings = watchedNamespaces.map(
      (ns) =>
        new k8s.KubeRoleBinding(this, `watched-${ns}`, {
          metadata: { name: names.clusterRole, namespace: ns, labels },
          roleRef,
          subjects: [subject],
        }),
    );
    if (watchedNamespaces.length === 0) {
      this.clusterRoleBinding = new k8s.KubeClusterRoleBinding(this, 'cluster-role-binding', {
        metadata: { name: names.clusterRole, labels },
        roleRef,
        subjects: [subject],
      });
    }

    // --- Secrets: only where bound. ---
    // To let recon8s manage the credentials of MySQLClusters in another namespace, bind this role there:
    //   kubectl create rolebinding recon8s-credentials -n <namespace> \
    //     --clusterrole=recon8s-credentials --serviceaccount=<operator namespace>:recon8s
    // (or list the namespace in credentialsNamespaces and apply again). Without it, a MySQLCluster there
    // reports Degraded/CredentialsForbidden, with this command in the message, and is checked again
    // every 30 s. A Secret you create yourself (spec.credentialsSecretName) still needs `get`.
    this.credentialsRole = new k8s.KubeClusterRole(this, 'credentials-role', {
      metadata: { name: names.credentialsRole, labels },
      // patch: only to move the generated Secret's ownerReference when pvcRetention.whenDeleted changes.
      // list and watch: each Secret a MySQLCluster names is watched by name (a field selector), so that
      // looking at a cluster costs no request (lib/controller/mysql-cluster/secret-cache.ts).
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'patch'] }],
    });
    this.credentialsBindings = credentialsNamespaces.map(
      (ns) =>
        new k8s.KubeRoleBinding(this, `credentials-${ns}`, {
          metadata: { name: names.credentialsRole, namespace: ns, labels },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: names.credentialsRole },
          subjects: [subject],
        }),
    );

    // --- Nodes and PersistentVolumes, read-only: cluster-scoped, so bound cluster-wide even with watchedNamespaces. ---
    // A member lost with its node (lib/controller/mysql-cluster/ha/node-loss.ts): the Node its pod and its
    // volume name (Ready, the out-of-service taint), and the PersistentVolume its claim is bound to (is it
    // pinned to that node?). Read only while a member is unwell; never changed. Without it a cluster
    // reports Degraded/NodeLossForbidden and node loss is not acted on.
    this.nodeReaderRole = new k8s.KubeClusterRole(this, 'node-reader-role', {
      metadata: { name: names.nodeReaderRole, labels },
      rules: [{ apiGroups: [''], resources: ['nodes', 'persistentvolumes'], verbs: ['get'] }],
    });
    new k8s.KubeClusterRoleBinding(this, 'node-reader-role-binding', {
      metadata: { name: names.nodeReaderRole, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: names.nodeReaderRole },
      subjects: [subject],
    });

    // --- Leader election: a Lease in the operator namespace, and only there. ---
    // create cannot be limited to a name (the name is in the body); get and update are, to our Lease
    // (the Deployment passes it as --leader-election-id: two installs in one namespace elect apart).
    this.leaderElectionRole = new k8s.KubeRole(this, 'leader-election-role', {
      metadata: { name: names.leaderElectionRole, namespace, labels },
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          resourceNames: [names.leaderElectionLease],
          verbs: ['get', 'update'],
        },
      ],
    });
    new k8s.KubeRoleBinding(this, 'leader-election-role-binding', {
      metadata: { name: names.leaderElectionRole, namespace, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: names.leaderElectionRole },
      subjects: [subject],
    });

    // --- The controller. ---
    this.deployment = new k8s.KubeDeployment(this, 'deployment', {
      metadata: { name, namespace, labels },
      spec: {
        replicas,
        selector: { matchLabels: { ...selector } },
        template: {
          metadata: { labels: { ...labels } },
          spec: {
            serviceAccountName: name,
            // The controller talks to the API server: it needs the token, whatever the ServiceAccount says.
            automountServiceAccountToken: true,
            enableServiceLinks: false,
            securityContext: podSecurityContext({
              runAsUser: OPERATOR_UID,
              runAsGroup: OPERATOR_UID,
              runAsNonRoot: true,
            }),
            containers: [
              {
                name: 'controller',
                image,
                imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
                args: [
                  ...CONTROLLER_ARGS,
                  `--leader-election-id=${names.leaderElectionLease}`,
                  // Named in the CredentialsForbidden condition: the grant to make is this install's.
                  `--credentials-cluster-role=${names.credentialsRole}`,
                  ...(allowsAny(appServiceAccounts) ? [] : [`--app-service-accounts=${appServiceAccounts.join(',')}`]),
                  ...(allowsAny(appSecrets) ? [] : [`--app-secrets=${appSecrets.join(',')}`]),
                  ...(watchedNamespaces.length > 0 ? [`--namespaces=${watchedNamespaces.join(',')}`] : []),
                ],
                // --leader-election-namespace defaults to $POD_NAMESPACE.
                env: [{ name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
                ports: [
                  { name: 'metrics', containerPort: METRICS_PORT, protocol: 'TCP' },
                  { name: 'health', containerPort: HEALTH_PORT, protocol: 'TCP' },
                ],
                livenessProbe: {
                  httpGet: { path: '/healthz', port: k8s.IntOrString.fromString('health') },
                  periodSeconds: 20,
                  timeoutSeconds: 1,
                  failureThreshold: 3,
                },
                readinessProbe: {
                  httpGet: { path: '/readyz', port: k8s.IntOrString.fromString('health') },
                  periodSeconds: 10,
                  timeoutSeconds: 1,
                  failureThreshold: 3,
                },
                resources: {
                  requests: quantities(resources.requests),
                  limits: quantities(resources.limits),
                },
                securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
                volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
              },
            ],
            volumes: [{ name: 'tmp', emptyDir: {} }],
            imagePullSecrets: imagePullSecrets.length > 0 ? imagePullSecrets.map((n) => ({ name: n })) : undefined,
            nodeSelector: Object.keys(nodeSelector).length > 0 ? nodeSelector : undefined,
            tolerations: tolerations.length > 0 ? tolerations : undefined,
            affinity: props.affinity ?? (replicas > 1 ? preferredAntiAffinity(selector) : undefined),
          },
        },
      },
    });
    if (replicas > 1) {
      this.disruptionBudget = new k8s.KubePodDisruptionBudget(this, 'disruption-budget', {
        metadata: { name, namespace, labels },
        spec: {
          maxUnavailable: k8s.IntOrString.fromNumber(1),
          selector: { matchLabels: { ...selector } },
          unhealthyPodEvictionPolicy: 'AlwaysAllow',
        },
      });
    }
    // For Prometheus (a ServiceMonitor selects it by its labels and the port name "metrics").
    this.metricsService = new k8s.KubeService(this, 'metrics-service', {
      metadata: { name: names.metricsService, namespace, labels },
      spec: {
        type: 'ClusterIP',
        selector: { ...selector },
        ports: [
          { name: 'metrics', port: METRICS_PORT, targetPort: k8s.IntOrString.fromString('metrics'), protocol: 'TCP' },
        ],
      },
    });
    if (props.serviceMonitor === true) {
      this.serviceMonitor = new ApiObject(this, 'service-monitor', {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name, namespace, labels },
        spec: {
          selector: { matchLabels: { ...selector } },
          namespaceSelector: { matchNames: [namespace] },
          endpoints: [{ port: 'metrics', path: '/metrics', interval: '30s' }],
        },
      });
    }
    if (props.prometheusRule === true)
      this.alertRules = new Recon8sAlertRules(this, 'alert-rules', { name: `${name}-alerts`, namespace, labels });
    if (props.podMonitor === true)
      this.podMonitor = new MySQLPodMonitor(this, 'pod-monitor', { name: `${name}-mysql`, namespace, labels });
    if (props.grafanaDashboard === true)
      this.dashboard = new Recon8sDashboard(this, 'dashboard', { name: `${name}-dashboard`, namespace, labels });
  }
}

function quantities(
  list: { readonly cpu?: string; readonly memory?: string } | undefined,
): Record<string, k8s.Quantity> | undefined {
  if (!list) return undefined;
  const out = Object.fromEntries(
    Object.entries(list)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, k8s.Quantity.fromString(v)]),
  );
  return Object.keys(out).length > 0 ? out : undefined;
}

const QUANTITY = /^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/;

/** Every prop checked at once; the message names each prop, the value received and what was expected. */
function validate(p: {
  appServiceAccounts: readonly string[];
  appSecrets: readonly string[];
  namespace: string;
  name: string;
  clusterScopedName: string;
  image: string;
  replicas: number;
  credentialsNamespaces: readonly string[];
  watchedNamespaces: readonly string[];
  resources: OperatorResources;
  imagePullSecrets: readonly string[];
  nodeSelector: Readonly<Record<string, string>>;
  tolerations: readonly k8s.Toleration[];
}): void {
  const problems: string[] = [
    ...allowListProblems('appServiceAccounts', p.appServiceAccounts),
    ...allowListProblems('appSecrets', p.appSecrets),
  ];
  const isNamespace = (n: string): boolean => n.length <= 63 && DNS_LABEL.test(n);
  if (!isNamespace(p.namespace)) problems.push(`namespace: got ${JSON.stringify(p.namespace)}, expected a DNS label`);
  if (p.name.length > MAX_NAME_LENGTH || !DNS_LABEL.test(p.name))
    problems.push(
      `name: got ${JSON.stringify(p.name)}, expected a DNS label of at most ${MAX_NAME_LENGTH} characters (<name>-metrics is a Service name)`,
    );
  if (p.clusterScopedName.length > 200 || !RBAC_NAME.test(p.clusterScopedName))
    problems.push(
      `clusterScopedName: got ${JSON.stringify(p.clusterScopedName)}, expected at most 200 lowercase letters, digits, "-", "." or ":", starting and ending alphanumeric`,
    );
  if (p.image.trim() === '') problems.push('image: got "", expected an image reference');
  if (!Number.isInteger(p.replicas) || p.replicas < 1)
    problems.push(`replicas: got ${p.replicas}, expected an integer of at least 1`);
  for (const [prop, list] of [
    ['credentialsNamespaces', p.credentialsNamespaces],
    ['watchedNamespaces', p.watchedNamespaces],
  ] as const) {
    const seen = new Set<string>();
    for (const n of list) {
      if (!isNamespace(n)) problems.push(`${prop}: got ${JSON.stringify(n)}, expected a DNS label`);
      if (seen.has(n)) problems.push(`${prop}: ${JSON.stringify(n)} is listed twice`);
      seen.add(n);
    }
  }
  if (p.watchedNamespaces.length > 0)
    for (const n of p.credentialsNamespaces)
      if (!p.watchedNamespaces.includes(n))
        problems.push(
          `credentialsNamespaces: ${JSON.stringify(n)} is not one of watchedNamespaces (${p.watchedNamespaces.join(', ')}): the controller would hold Secrets of a namespace it never reconciles`,
        );
  for (const part of ['requests', 'limits'] as const) {
    for (const [resource, value] of Object.entries(p.resources[part] ?? {})) {
      if (resource !== 'cpu' && resource !== 'memory')
        problems.push(`resources.${part}: got ${JSON.stringify(resource)}, expected cpu or memory`);
      else if (typeof value !== 'string' || !QUANTITY.test(value))
        problems.push(
          `resources.${part}.${resource}: got ${JSON.stringify(value)}, expected a quantity such as "100m" or "256Mi"`,
        );
    }
  }
  const secrets = new Set<string>();
  for (const n of p.imagePullSecrets) {
    if (n.length > 253 || !DNS_SUBDOMAIN.test(n))
      problems.push(`imagePullSecrets: got ${JSON.stringify(n)}, expected a Secret name (a DNS subdomain)`);
    if (secrets.has(n)) problems.push(`imagePullSecrets: ${JSON.stringify(n)} is listed twice`);
    secrets.add(n);
  }
  for (const [key, value] of Object.entries(p.nodeSelector)) {
    if (!QUALIFIED_KEY.test(key))
      problems.push(`nodeSelector: got key ${JSON.stringify(key)}, expected a label key such as "kubernetes.io/os"`);
    if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value))
      problems.push(
        `nodeSelector.${key}: got ${JSON.stringify(value)}, expected a label value (at most 63 letters, digits, "-", "_" or ".")`,
      );
  }
  p.tolerations.forEach((t, i) => {
    const at = `tolerations[${i}]`;
    const operator = t.operator ?? 'Equal';
    if (!TOLERATION_OPERATORS.includes(operator))
      problems.push(`${at}.operator: got ${JSON.stringify(t.operator)}, expected Exists or Equal`);
    if (t.key !== undefined && t.key !== '' && !QUALIFIED_KEY.test(t.key))
      problems.push(`${at}.key: got ${JSON.stringify(t.key)}, expected a label key`);
    if ((t.key ?? '') === '' && operator !== 'Exists')
      problems.push(
        `${at}.operator: got ${JSON.stringify(operator)} with no key, expected Exists (which tolerates every taint)`,
      );
    if (operator === 'Exists' && (t.value ?? '') !== '')
      problems.push(`${at}.value: got ${JSON.stringify(t.value)} with operator Exists, expected none`);
    if (t.effect !== undefined && !TAINT_EFFECTS.includes(t.effect))
      problems.push(
        `${at}.effect: got ${JSON.stringify(t.effect)}, expected NoSchedule, PreferNoSchedule or NoExecute`,
      );
    if (t.tolerationSeconds !== undefined && t.effect !== 'NoExecute')
      problems.push(
        `${at}.tolerationSeconds: got ${t.tolerationSeconds} with effect ${JSON.stringify(t.effect ?? '')}, expected it only with NoExecute`,
      );
  });
  if (problems.length > 0) throw new Error(`OperatorChart: ${problems.join('; ')}`);
}
