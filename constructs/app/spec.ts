// The one definition of the App kind: its props/spec, status, and CRD facts.
import * as s from '../schema/schema.js';
import type { KindDefinition } from '../schema/schema.js';
import {
  IMAGE_REFERENCE_HINT,
  IMAGE_REFERENCE_PATTERN,
  affinity,
  env,
  metadataMap,
  nodeSelector,
  paused,
  probe,
  resources,
  tolerations,
} from '../common/spec-nodes.js';
import { conditions, observedGeneration } from '../common/status-nodes.js';
import { DATABASE_ACCESS, DATABASE_ENV_NAMES, DATABASE_NAME_PATTERN, SYSTEM_SCHEMAS } from './database.js';

const port = s.object({
  typeName: 'AppPort',
  description: 'A port the application listens on, exposed by the Service.',
  properties: {
    name: s.optional(
      s.string({
        description:
          'Port name (unique; what probes and other objects refer to). Required when there are several ports, as Kubernetes requires of a Service.',
        defaultDoc: 'no name (allowed for a single port)',
        pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
        patternHint: 'an IANA service name (lower-case letters, digits and "-")',
        maxLength: 15,
      }),
    ),
    port: s.required(s.integer({ description: 'The port the Service exposes.', minimum: 1, maximum: 65535 })),
    targetPort: s.optional(
      s.integer({
        description: 'The port the container listens on.',
        minimum: 1,
        maximum: 65535,
        defaultDoc: 'the same as port',
      }),
    ),
    protocol: s.optional(
      s.string({ description: 'Transport protocol.', enum: ['TCP', 'UDP', 'SCTP'], default: 'TCP' }),
    ),
  },
});

const securityContext = s.object({
  typeName: 'AppSecurityContext',
  description:
    'Who the container runs as. The default passes the Pod Security "restricted" profile; an image that must run as root says so explicitly with runAsNonRoot: false and runAsUser: 0.',
  default: {},
  defaultDoc: 'uid and gid 65532, non-root, no privilege escalation, all capabilities dropped, seccomp RuntimeDefault',
  properties: {
    runAsUser: s.optional(
      s.integer({ description: 'The uid the container runs as.', minimum: 0, maximum: 2147483647, default: 65532 }),
    ),
    runAsGroup: s.optional(
      s.integer({ description: 'The gid the container runs as.', minimum: 0, maximum: 2147483647, default: 65532 }),
    ),
    fsGroup: s.optional(
      s.integer({
        description: 'The group that owns mounted volumes.',
        minimum: 0,
        maximum: 2147483647,
        defaultDoc: 'not set',
      }),
    ),
    runAsNonRoot: s.optional(
      s.boolean({ description: 'Refuse to start a container that would run as uid 0.', default: true }),
    ),
    readOnlyRootFilesystem: s.optional(
      s.boolean({ description: 'Mount the image read-only (a writable /tmp is always mounted).', default: false }),
    ),
  },
  rules: [
    s.rule<{ runAsUser?: number; runAsNonRoot?: boolean }>(
      '!(has(self.runAsUser) && self.runAsUser == 0 && (!has(self.runAsNonRoot) || self.runAsNonRoot))',
      'runAsUser 0 (root) needs runAsNonRoot: false, said explicitly',
      (v) => !(v.runAsUser === 0 && v.runAsNonRoot !== false),
      { fieldPath: '.runAsUser' },
    ),
  ],
});

const autoscaling = s.object({
  typeName: 'AppAutoscaling',
  description:
    'A HorizontalPodAutoscaler for the Deployment. When set, the Deployment leaves replicas to the autoscaler.',
  properties: {
    minReplicas: s.optional(s.integer({ description: 'The fewest replicas.', minimum: 1, maximum: 1000, default: 1 })),
    maxReplicas: s.required(s.integer({ description: 'The most replicas.', minimum: 1, maximum: 1000 })),
    targetCPUUtilizationPercent: s.optional(
      s.integer({
        description: 'Average CPU use, in percent of requests, to aim for.',
        minimum: 1,
        maximum: 1000,
        default: 80,
      }),
    ),
    targetMemoryUtilizationPercent: s.optional(
      s.integer({
        description: 'Average memory use, in percent of requests, to aim for.',
        minimum: 1,
        maximum: 1000,
        defaultDoc: 'memory is not a target',
      }),
    ),
  },
  rules: [
    s.rule<{ minReplicas?: number; maxReplicas: number }>(
      '!has(self.minReplicas) || self.minReplicas <= self.maxReplicas',
      'minReplicas no greater than maxReplicas',
      (v) => (v.minReplicas ?? 1) <= v.maxReplicas,
      { fieldPath: '.minReplicas' },
    ),
  ],
});

/** A percentage from 1% to 100%, written once for the CEL rule and the runtime check. */
const PERCENT_1_TO_100 = '^([1-9][0-9]?|100)%$';

const disruptionBudget = s.object({
  typeName: 'AppDisruptionBudget',
  description:
    'The PodDisruptionBudget, rendered while more than one pod is guaranteed to run (replicas, or autoscaling.minReplicas, of 2 or more): how many pods a voluntary disruption such as a node drain may take down at once.',
  default: {},
  defaultDoc: 'enabled, one pod at a time',
  properties: {
    enabled: s.optional(
      s.boolean({
        description:
          'Render the PodDisruptionBudget. false leaves voluntary disruptions unlimited (a development namespace, or a budget managed elsewhere).',
        default: true,
      }),
    ),
    maxUnavailable: s.optional(
      s.intOrString({
        description:
          'Pods that may be unavailable at once: a number of at least 1, or a percentage of the desired pods from "1%" to "100%" (rounded up, so never 0).',
        default: 1,
      }),
    ),
  },
  rules: [
    s.rule<{ maxUnavailable?: number | string }>(
      `!has(self.maxUnavailable) || (type(self.maxUnavailable) == int ? self.maxUnavailable >= 1 : self.maxUnavailable.matches('${PERCENT_1_TO_100}'))`,
      'maxUnavailable of at least 1, or a percentage from "1%" to "100%" (0 would block every drain)',
      (v) =>
        v.maxUnavailable === undefined ||
        (typeof v.maxUnavailable === 'number'
          ? Number.isInteger(v.maxUnavailable) && v.maxUnavailable >= 1
          : new RegExp(PERCENT_1_TO_100).test(v.maxUnavailable)),
      { fieldPath: '.maxUnavailable' },
    ),
  ],
});

interface ProbeSpec {
  readonly httpGet?: { readonly port: number | string };
  readonly tcpSocket?: { readonly port: number | string };
}
const namedPortOf = (p: ProbeSpec | undefined): string | undefined => {
  const port = p?.httpGet?.port ?? p?.tcpSocket?.port;
  return typeof port === 'string' ? port : undefined;
};

const systemSchemaRegex = `^(?i)(${SYSTEM_SCHEMAS.join('|')})$`;

const database = s.object({
  typeName: 'AppDatabase',
  description:
    "A database of a MySQLCluster for this App, with an account of its own. The controller creates the database when it is missing (and never drops it), creates the App's account with a generated password, grants it the access asked on that database and nothing else, and writes the Secret `<app>-db` (owned by the App) in the servicebinding.io shape. The container gets DB_HOST (the primary Service), DB_READ_HOST (the replicas Service), DB_PORT, DB_NAME, DB_USER and DB_PASSWORD (from that Secret), and the Secret is mounted at $SERVICE_BINDING_ROOT/database. Deleting the App, or this field, drops the account, never the database.",
  defaultDoc: 'no database account',
  properties: {
    cluster: s.required(
      s.string({
        description: "The MySQLCluster, in the App's namespace.",
        pattern: '^[a-z]([-a-z0-9]*[a-z0-9])?$',
        patternHint: 'the name of a MySQLCluster (a DNS-1035 label)',
        maxLength: 63,
      }),
    ),
    name: s.required(
      s.string({
        description: `The database (schema). Created when missing; never dropped. Not one of MySQL's own (${SYSTEM_SCHEMAS.join(', ')}).`,
        pattern: DATABASE_NAME_PATTERN,
        patternHint: 'letters, digits and "_", not starting with a digit, at most 64 characters',
        maxLength: 64,
        rules: [
          s.rule<string>(
            `!self.matches('${systemSchemaRegex}')`,
            `a database of the App's own, not one of MySQL's system schemas (${SYSTEM_SCHEMAS.join(', ')})`,
            (v) => !(SYSTEM_SCHEMAS as readonly string[]).includes(v.toLowerCase()),
          ),
        ],
      }),
    ),
    access: s.optional(
      s.string({
        description:
          'readWrite: read and write data and manage the tables of the database (no grants, no other database). readOnly: SELECT and SHOW VIEW.',
        enum: DATABASE_ACCESS,
        default: 'readWrite',
      }),
    ),
  },
});

/** An IPv4 or IPv6 network in CIDR notation, as NetworkPolicy's ipBlock takes it. */
const CIDR_PATTERN =
  '^(([0-9]{1,3}\\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])|[0-9a-fA-F:]*:[0-9a-fA-F:.]*/([0-9]|[1-9][0-9]|1[01][0-9]|12[0-8]))$';
const CIDR_HINT = 'a network in CIDR notation, e.g. "10.0.0.0/8" or "fd00::/8"';

const matchLabels = (whose: string): s.ObjectNode =>
  s.object({
    typeName: whose === 'pods' ? 'AppNetworkPolicyPodSelector' : 'AppNetworkPolicyNamespaceSelector',
    description: `Selects ${whose} by their labels (all of them must match).`,
    properties: {
      matchLabels: s.required(
        s.map({
          description: `The labels the ${whose} must carry.`,
          values: s.string({
            description: 'A label value.',
            pattern: '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$',
            patternHint:
              'a label value (at most 63 letters, digits, "-", "_" or ".", starting and ending alphanumeric)',
            maxLength: 63,
          }),
          keyPattern: s.QUALIFIED_KEY_PATTERN,
          keyPatternHint: 'a qualified name such as "team" or "example.com/team"',
          maxProperties: 16,
        }),
      ),
    },
  });

const networkPolicyPeer = s.object({
  typeName: 'AppNetworkPolicyPeer',
  description:
    "A source admitted to the App's ports, as a NetworkPolicy peer: pods (podSelector, in the App's namespace unless namespaceSelector is set too), the pods of namespaces (namespaceSelector), or addresses (ipBlock, alone).",
  properties: {
    podSelector: s.optional(matchLabels('pods')),
    namespaceSelector: s.optional(matchLabels('namespaces')),
    ipBlock: s.optional(
      s.object({
        typeName: 'AppNetworkPolicyIpBlock',
        description:
          'Addresses, e.g. a load balancer\u2019s or the nodes\u2019 network (what a NodePort or LoadBalancer Service forwards from, unless it keeps the client\u2019s address).',
        properties: {
          cidr: s.required(s.string({ description: 'The network.', pattern: CIDR_PATTERN, patternHint: CIDR_HINT })),
          except: s.optional(
            s.array({
              description: 'Networks inside cidr that are not admitted.',
              items: s.string({ description: 'A network.', pattern: CIDR_PATTERN, patternHint: CIDR_HINT }),
              maxItems: 16,
              listType: 'set',
              defaultDoc: 'none',
            }),
          ),
        },
      }),
    ),
  },
  rules: [
    s.rule<{ podSelector?: unknown; namespaceSelector?: unknown; ipBlock?: unknown }>(
      'has(self.podSelector) || has(self.namespaceSelector) || has(self.ipBlock)',
      'one of podSelector, namespaceSelector or ipBlock (an empty peer would admit nothing)',
      (v) => v.podSelector !== undefined || v.namespaceSelector !== undefined || v.ipBlock !== undefined,
    ),
    s.rule<{ podSelector?: unknown; namespaceSelector?: unknown; ipBlock?: unknown }>(
      '!has(self.ipBlock) || !(has(self.podSelector) || has(self.namespaceSelector))',
      'ipBlock alone: NetworkPolicy does not combine it with podSelector or namespaceSelector',
      (v) => v.ipBlock === undefined || (v.podSelector === undefined && v.namespaceSelector === undefined),
      { fieldPath: '.ipBlock' },
    ),
  ],
});

const networkPolicy = s.object({
  typeName: 'AppNetworkPolicy',
  description:
    "The NetworkPolicy <name> (networking.k8s.io/v1) that admits to the App's pods connections on its declared ports (spec.ports, the container side: targetPort) and nothing else: a port the container listens on but the spec does not declare is closed, and an App without ports takes no connection. From any source unless `from` narrows it; egress unrestricted unless `restrictEgress`. Where the network plugin does not enforce NetworkPolicies the policy is inert (docs/security.md). NetworkPolicies add up: a policy of your own that selects the App's pods can admit more (another port, another destination), never less.",
  default: {},
  defaultDoc: 'on: the declared ports from any source, egress unrestricted',
  properties: {
    enabled: s.optional(
      s.boolean({
        description:
          'Render the NetworkPolicy. Turn it off only to manage the App\u2019s traffic with policies of your own: without it, any pod that can reach the App\u2019s pods may try every port they listen on.',
        default: true,
      }),
    ),
    from: s.optional(
      s.array({
        description:
          "The only sources admitted to the declared ports (any of them). The kubelet's probes come from the node, which NetworkPolicies always admit.",
        items: networkPolicyPeer,
        // At least one: an empty list of sources would admit every source.
        minItems: 1,
        maxItems: 16,
        defaultDoc: 'any source',
      }),
    ),
    restrictEgress: s.optional(
      s.boolean({
        description:
          "Let the App's pods open connections only to DNS (port 53, UDP and TCP, anywhere) and, with spec.database, to its MySQLCluster's members on 3306. Off by default: what an application must reach (APIs, object stores, other Services) is its own, and a default that guessed would break it; add a policy of your own to admit more.",
        default: false,
      }),
    ),
  },
});

export const appSpec = s.object({
  typeName: 'AppSpec',
  description:
    'One application: a Deployment, and a Service when it has ports, with the companions (autoscaler, disruption budget) it asks for.',
  properties: {
    image: s.required(
      s.string({
        description: 'The container image, e.g. "nginx:1.27" or a digest reference.',
        minLength: 1,
        maxLength: 512,
        pattern: IMAGE_REFERENCE_PATTERN,
        patternHint: IMAGE_REFERENCE_HINT,
      }),
    ),
    replicas: s.optional(
      s.integer({
        description:
          'Desired pods. While autoscaling is set the autoscaler decides, and changing this (kubectl scale included) is refused.',
        minimum: 0,
        maximum: 1000,
        default: 1,
      }),
    ),
    command: s.optional(
      s.array({
        description: 'Overrides the image entrypoint.',
        items: s.string({ description: 'An argument.' }),
        maxItems: 64,
        defaultDoc: 'the image entrypoint',
      }),
    ),
    args: s.optional(
      s.array({
        description: 'Arguments to the entrypoint.',
        items: s.string({ description: 'An argument.' }),
        maxItems: 256,
        defaultDoc: 'the image cmd',
      }),
    ),
    env: s.optional(env),
    ports: s.optional(
      s.array({
        description: 'Ports the application listens on. With none, no Service is rendered.',
        items: port,
        maxItems: 32,
        listType: 'map',
        listMapKeys: ['port', 'protocol'],
      }),
    ),
    serviceType: s.optional(
      s.string({
        description: 'How the Service is exposed.',
        enum: ['ClusterIP', 'NodePort', 'LoadBalancer'],
        default: 'ClusterIP',
      }),
    ),
    resources: s.optional(resources({ requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } })),
    livenessProbe: s.optional({
      ...probe,
      description: 'Restart the container when this fails.',
      defaultDoc: 'no liveness probe',
    }),
    readinessProbe: s.optional({
      ...probe,
      description: 'Take the pod out of the Service while this fails.',
      defaultDoc: 'no readiness probe',
    }),
    autoscaling: s.optional(autoscaling),
    disruptionBudget: s.optional(disruptionBudget),
    labels: s.optional(metadataMap('labels')),
    annotations: s.optional(metadataMap('annotations')),
    serviceAccountName: s.optional(
      s.string({
        description:
          "The ServiceAccount the pods run as: any of the namespace, as for a pod, unless the operator's appServiceAccounts allow-list says otherwise (an App naming another is refused: Degraded/ReferenceNotAllowed).",
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        patternHint: 'a DNS subdomain name',
        maxLength: 253,
        defaultDoc: 'the namespace default, with no API token mounted',
      }),
    ),
    imagePullPolicy: s.optional(
      s.string({
        description: 'When the kubelet pulls the image.',
        enum: ['Always', 'IfNotPresent', 'Never'],
        default: 'IfNotPresent',
      }),
    ),
    imagePullSecrets: s.optional(
      s.array({
        description: 'Secrets holding registry credentials.',
        items: s.string({
          description: 'A Secret name.',
          pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
          patternHint: 'a DNS subdomain name',
        }),
        maxItems: 16,
        listType: 'set',
      }),
    ),
    securityContext: s.optional(securityContext),
    database: s.optional(database),
    networkPolicy: s.optional(networkPolicy),
    nodeSelector: s.optional(nodeSelector),
    tolerations: s.optional(tolerations),
    affinity: s.optional({ ...affinity, defaultDoc: 'a preferred anti-affinity that spreads replicas across nodes' }),
    paused,
  },
  rules: [
    // Judged by recon8s rather than at admission: the CEL would walk every probe and port.
    ...(['livenessProbe', 'readinessProbe'] as const).map((probe) =>
      s.runtimeRule<{ ports?: readonly { name: string }[] } & Partial<Record<typeof probe, ProbeSpec>>>(
        'a probe port name that is one of spec.ports[].name (or a port number)',
        (v) => {
          const named = namedPortOf(v[probe]);
          return named === undefined || (v.ports ?? []).some((port) => port.name === named);
        },
        { fieldPath: `.${probe}` },
      ),
    ),
    s.rule<{
      autoscaling?: { targetMemoryUtilizationPercent?: number };
      resources?: { requests?: { cpu?: unknown; memory?: unknown } };
    }>(
      '!has(self.autoscaling) || (has(self.resources.requests) && has(self.resources.requests.cpu) && (!has(self.autoscaling.targetMemoryUtilizationPercent) || has(self.resources.requests.memory)))',
      'resources.requests.cpu (and requests.memory with a memory target) when autoscaling is set: utilization is measured against requests',
      (v) =>
        !v.autoscaling ||
        (v.resources?.requests?.cpu !== undefined &&
          (v.autoscaling.targetMemoryUtilizationPercent === undefined || v.resources.requests.memory !== undefined)),
      { fieldPath: '.resources' },
    ),
    s.rule<{ ports?: readonly { name?: string }[] }>(
      '!has(self.ports) || self.ports.size() <= 1 || self.ports.all(p, has(p.name))',
      'a name on every port when there are several (Kubernetes requires Service port names then)',
      (v) => (v.ports?.length ?? 0) <= 1 || (v.ports ?? []).every((p) => p.name !== undefined),
      { fieldPath: '.ports' },
    ),
    s.rule<{ ports?: readonly { name?: string }[] }>(
      '!has(self.ports) || self.ports.all(p, !has(p.name) || self.ports.exists_one(q, has(q.name) && q.name == p.name))',
      'unique port names',
      (v) => {
        const names = (v.ports ?? []).flatMap((p) => (p.name === undefined ? [] : [p.name]));
        return new Set(names).size === names.length;
      },
      { fieldPath: '.ports' },
    ),
    s.transitionRule(
      '!has(self.autoscaling) || !has(oldSelf.autoscaling) || !has(self.replicas) || !has(oldSelf.replicas) || self.replicas == oldSelf.replicas',
      'replicas is left to the HorizontalPodAutoscaler while autoscaling is set: change autoscaling.minReplicas and maxReplicas instead (kubectl scale cannot scale an autoscaled App)',
      { fieldPath: '.replicas' },
    ),
    s.rule<{ ports?: readonly unknown[]; serviceType?: string }>(
      "(has(self.ports) && self.ports.size() > 0) || !has(self.serviceType) || self.serviceType == 'ClusterIP'",
      'ports, when serviceType is NodePort or LoadBalancer: a Service needs at least one port',
      (v) => (v.ports?.length ?? 0) > 0 || v.serviceType === undefined || v.serviceType === 'ClusterIP',
      { fieldPath: '.serviceType' },
    ),
    s.rule<{ database?: unknown; env?: readonly { name: string }[] }>(
      `!has(self.database) || !has(self.env) || self.env.all(e, !(e.name in [${DATABASE_ENV_NAMES.map((n) => `'${n}'`).join(', ')}]))`,
      `no env named ${DATABASE_ENV_NAMES.join(', ')} when database is set: the binding sets them`,
      (v) => v.database === undefined || (v.env ?? []).every((e) => !DATABASE_ENV_NAMES.includes(e.name)),
      { fieldPath: '.env' },
    ),
  ],
});

export const appStatus = s.object({
  typeName: 'AppStatus',
  description: 'What the controller last observed.',
  properties: {
    observedGeneration,
    conditions,
    replicas: s.optional(s.integer({ description: 'Pods of the Deployment.', minimum: 0 })),
    desiredReplicas: s.optional(
      s.integer({
        description: 'Pods the Deployment is asked for: spec.replicas, or what the autoscaler set.',
        minimum: 0,
      }),
    ),
    readyReplicas: s.optional(
      s.integer({
        description: 'Pods of the current spec that are available (the old pods of a rollout are not counted).',
        minimum: 0,
      }),
    ),
    selector: s.optional(s.string({ description: 'The label selector of the pods (for the scale subresource).' })),
    endpoint: s.optional(s.string({ description: 'Where clients connect: the Service DNS name and first port.' })),
    binding: s.optional(
      s.object({
        typeName: 'AppBindingStatus',
        description:
          'The Secret holding the database binding (servicebinding.io: a binding-aware framework reads it from here).',
        properties: { name: s.required(s.string({ description: 'The Secret, in the namespace of the App.' })) },
      }),
    ),
    credentialRotation: s.optional(
      s.object({
        typeName: 'AppCredentialRotationStatus',
        description:
          'The rotation of the database password (`recon8s rotate-credentials app`, the recon8s.dev/rotate-credentials annotation). Never holds a password.',
        properties: {
          requested: s.optional(s.string({ description: 'The token of the rotation asked for.' })),
          completed: s.optional(
            s.string({ description: 'The token of the last rotation completed (the old password refused).' }),
          ),
          phase: s.optional(
            s.string({
              description:
                'The phase of the rotation under way: Staging, Retaining, Switching, RollingPods, Discarding, Completing, Repairing or WaitingForAccount; absent when none is.',
            }),
          ),
          message: s.optional(s.string({ description: 'What is being done, or waited for.' })),
          rolledRevision: s.optional(
            s.string({
              description:
                'The password revision every pod of the App runs (all of them, terminating ones too), when they all run the one asked for.',
            }),
          ),
        },
      }),
    ),
  },
});

export const APP: KindDefinition = {
  group: 'recon8s.dev',
  version: 'v1alpha1',
  kind: 'App',
  plural: 'apps',
  singular: 'app',
  shortNames: ['r8app'],
  categories: ['recon8s'],
  description: 'An application: one resource instead of a Deployment, a Service and their companions.',
  childTypes: [
    { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments' },
    { apiVersion: 'v1', kind: 'Service', plural: 'services' },
    { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers' },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets' },
    { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', plural: 'networkpolicies' },
  ],
  spec: appSpec,
  status: appStatus,
  // The Service is named after the App and must be a DNS-1035 label.
  maxNameLength: 63,
  printerColumns: [
    { name: 'Image', type: 'string', jsonPath: '.spec.image' },
    {
      name: 'Desired',
      type: 'integer',
      jsonPath: '.status.desiredReplicas',
      description: "Pods asked for: spec.replicas, or the autoscaler's choice.",
    },
    {
      name: 'Ready',
      type: 'integer',
      jsonPath: '.status.readyReplicas',
      description: 'Pods of the current spec that are available; old pods of a rollout are not counted.',
    },
    { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
    {
      name: 'Degraded',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Degraded")].reason',
      description: 'AsExpected, or why not.',
    },
    { name: 'Paused', type: 'boolean', jsonPath: '.spec.paused' },
    { name: 'Endpoint', type: 'string', jsonPath: '.status.endpoint', priority: 1 },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  scale: {
    specReplicasPath: '.spec.replicas',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector',
  },
};
