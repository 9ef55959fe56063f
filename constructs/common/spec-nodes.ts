// Spec nodes that App and MySQLCluster share. Each is part of the one definition of both kinds.
import * as s from '../schema/schema.js';
import { BOUND_CLUSTER_LABEL } from './metadata.js';

const RESERVED_LABEL_PREFIX = 'app.kubernetes.io/';

const resourceList = (description: string): s.ObjectNode =>
  s.object({
    typeName: 'ResourceList',
    description,
    properties: resourceListProperties,
  });
const resourceListProperties = {
  cpu: s.optional(s.quantity({ description: 'CPU, in cores, e.g. "250m" or 1.' })),
  memory: s.optional(s.quantity({ description: 'Memory, with a byte unit, e.g. "256Mi".', bytes: true })),
};

/** Compute resources; when given, exactly what is given is set (the default applies only when the field is absent). */
export function resources(
  defaults: {
    requests: { cpu: string; memory: string };
    limits: { memory: string };
  },
  of: { readonly typeName: string; readonly what: string } = {
    typeName: 'ResourceRequirements',
    what: 'the main container',
  },
): s.ObjectNode {
  return s.object({
    typeName: of.typeName,
    description: `Compute resources of ${of.what}. When set, exactly these requests and limits are used. A CPU limit is not set by default: it throttles without protecting anything.`,
    default: defaults,
    properties: {
      requests: s.optional(resourceList('What the scheduler reserves for the container.')),
      limits: s.optional(resourceList('The most the container may use.')),
    },
  });
}

const keyRef = (typeName: string, kind: string): s.ObjectNode =>
  s.object({
    typeName,
    description: `Selects a key of a ${kind}.`,
    properties: {
      name: s.required(
        s.string({
          description: `Name of the ${kind} in the same namespace.`,
          pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
          patternHint: 'a DNS subdomain name',
          maxLength: 253,
        }),
      ),
      key: s.required(
        s.string({
          description: `The key within the ${kind}.`,
          pattern: '^[-._a-zA-Z0-9]+$',
          patternHint: 'a key of letters, digits, "-", "_" or "."',
          maxLength: 253,
        }),
      ),
      optional: s.optional(
        s.boolean({
          description: `Whether the container may start when the ${kind} or key is missing.`,
          defaultDoc: 'false',
        }),
      ),
    },
  });

export const envVar = s.object({
  typeName: 'EnvVar',
  description: 'An environment variable: a literal value, or a reference to a Secret or ConfigMap key.',
  properties: {
    name: s.required(
      s.string({
        description: 'Name of the variable.',
        pattern: '^[-._a-zA-Z][-._a-zA-Z0-9]*$',
        patternHint: 'a C identifier-like name (letters, digits, "_", "-", "."; not starting with a digit)',
      }),
    ),
    value: s.optional(
      s.string({ description: 'A literal value. Never put a password here: use valueFrom.secretKeyRef.' }),
    ),
    valueFrom: s.optional(
      s.object({
        typeName: 'EnvVarSource',
        description: 'Where the value comes from.',
        properties: {
          secretKeyRef: s.optional(keyRef('SecretKeySelector', 'Secret')),
          configMapKeyRef: s.optional(keyRef('ConfigMapKeySelector', 'ConfigMap')),
        },
        rules: [
          s.rule<{ secretKeyRef?: unknown; configMapKeyRef?: unknown }>(
            '[has(self.secretKeyRef), has(self.configMapKeyRef)].filter(x, x).size() == 1',
            'exactly one of secretKeyRef or configMapKeyRef',
            (v) => [v.secretKeyRef, v.configMapKeyRef].filter((x) => x !== undefined).length === 1,
          ),
        ],
      }),
    ),
  },
  rules: [
    s.rule<{ value?: unknown; valueFrom?: unknown }>(
      'has(self.value) != has(self.valueFrom)',
      'exactly one of value or valueFrom',
      (v) => (v.value !== undefined) !== (v.valueFrom !== undefined),
    ),
  ],
});

export const env = s.array({
  description: 'Environment variables of the main container.',
  items: envVar,
  maxItems: 256,
  listType: 'map',
  listMapKeys: ['name'],
});

export const probe = s.object({
  typeName: 'Probe',
  description: 'A health check: exactly one of httpGet, tcpSocket or exec, with timing.',
  properties: {
    httpGet: s.optional(
      s.object({
        typeName: 'HttpGetAction',
        description: 'An HTTP GET that must answer 200-399.',
        properties: {
          path: s.optional(
            s.string({
              description: 'Path to request.',
              pattern: '^/',
              patternHint: 'a path starting with "/"',
              default: '/',
            }),
          ),
          port: s.required(s.intOrString({ description: 'Container port number or name.' })),
          scheme: s.optional(s.string({ description: 'HTTP or HTTPS.', enum: ['HTTP', 'HTTPS'], default: 'HTTP' })),
        },
      }),
    ),
    tcpSocket: s.optional(
      s.object({
        typeName: 'TcpSocketAction',
        description: 'A TCP connection that must open.',
        properties: { port: s.required(s.intOrString({ description: 'Container port number or name.' })) },
      }),
    ),
    exec: s.optional(
      s.object({
        typeName: 'ExecAction',
        description: 'A command that must exit 0.',
        properties: {
          command: s.required(
            s.array({
              description: 'The command and its arguments (no shell).',
              items: s.string({ description: 'An argument.' }),
              minItems: 1,
            }),
          ),
        },
      }),
    ),
    initialDelaySeconds: s.optional(
      s.integer({ description: 'Seconds after start before the first check.', minimum: 0, maximum: 3600, default: 0 }),
    ),
    periodSeconds: s.optional(
      s.integer({ description: 'Seconds between checks.', minimum: 1, maximum: 3600, default: 10 }),
    ),
    timeoutSeconds: s.optional(
      s.integer({ description: 'Seconds a check may take.', minimum: 1, maximum: 3600, default: 1 }),
    ),
    failureThreshold: s.optional(
      s.integer({
        description: 'Failed checks in a row that count as a failure.',
        minimum: 1,
        maximum: 100,
        default: 3,
      }),
    ),
  },
  rules: [
    s.rule<{ httpGet?: unknown; tcpSocket?: unknown; exec?: unknown }>(
      '[has(self.httpGet), has(self.tcpSocket), has(self.exec)].filter(x, x).size() == 1',
      'exactly one of httpGet, tcpSocket or exec',
      (v) => [v.httpGet, v.tcpSocket, v.exec].filter((x) => x !== undefined).length === 1,
    ),
  ],
});

/** Labels or annotations a user adds to every object; keys under app.kubernetes.io/ are ours (selectors use them). */
export function metadataMap(what: 'labels' | 'annotations'): s.MapNode {
  const valueNode =
    what === 'labels'
      ? s.string({
          description: 'A label value.',
          pattern: '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$',
          patternHint: 'a label value (at most 63 letters, digits, "-", "_" or ".", starting and ending alphanumeric)',
          maxLength: 63,
        })
      : s.string({ description: 'An annotation value.' });
  return s.map({
    description:
      what === 'labels'
        ? 'Labels added to every rendered object and to the pod template (never to selectors). Keys under app.kubernetes.io/ are reserved.'
        : 'Annotations added to every rendered object and to the pod template.',
    values: valueNode,
    keyPattern: s.QUALIFIED_KEY_PATTERN,
    keyPatternHint: 'a qualified name such as "team" or "example.com/team"',
    maxProperties: 64,
    rules: [
      s.rule<Record<string, string>>(
        `self.all(k, !k.startsWith('${RESERVED_LABEL_PREFIX}'))`,
        `no keys under ${RESERVED_LABEL_PREFIX}: recon8s sets those and selects on them`,
        (m) => Object.keys(m).every((k) => !k.startsWith(RESERVED_LABEL_PREFIX)),
      ),
      ...(what === 'labels'
        ? [
            s.rule<Record<string, string>>(
              `!('${BOUND_CLUSTER_LABEL}' in self)`,
              `no key ${BOUND_CLUSTER_LABEL}: recon8s sets it on the pods of an App bound to a MySQLCluster, whose NetworkPolicy admits them`,
              (m) => !Object.hasOwn(m, BOUND_CLUSTER_LABEL),
            ),
          ]
        : []),
    ],
  });
}

export const nodeSelector = s.map({
  description: 'Node labels a pod requires (nodeSelector).',
  values: s.string({ description: 'A label value.' }),
  keyPattern: s.QUALIFIED_KEY_PATTERN,
  keyPatternHint: 'a qualified label key',
  maxProperties: 64,
});

export const tolerations = s.array({
  description: 'Tolerations of the pods, as in a PodSpec (validated by the API server when the workload is applied).',
  items: s.object({
    typeName: 'Toleration',
    description: 'A Kubernetes Toleration.',
    properties: {},
    preserveUnknownFields: true,
    tsType: 'k8s.Toleration',
  }),
  maxItems: 64,
});

export const affinity = s.object({
  typeName: 'Affinity',
  description: 'Affinity of the pods, as in a PodSpec (validated by the API server when the workload is applied).',
  properties: {},
  preserveUnknownFields: true,
  tsType: 'k8s.Affinity',
  defaultDoc: 'a preferred anti-affinity that spreads pods across nodes',
});

/** The maintenance switch every operator in this space has (Percona's pause, mariadb-operator's suspend). */
export const paused = s.optional(
  s.boolean({
    description:
      "Pause reconciliation: the controller leaves this resource's children exactly as they are (no apply, no prune, no Secret writes) and reports Progressing=False reason Paused, until this is cleared. cdk8s synth ignores it.",
    default: false,
  }),
);

/**
 * An image reference as container runtimes parse it (the distribution reference grammar:
 * `[host[:port]/]path[:tag][@algorithm:hex]`, path components lowercase), as one RE2-compatible
 * pattern: the API server checks it at admission, render() before anything is applied.
 */
export const IMAGE_REFERENCE_PATTERN = (() => {
  const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
  const dotted = `${domainComponent}(?:\\.${domainComponent})`;
  const port = '(?::[0-9]+)';
  // A first component is a registry only when it looks like one (a dot, a port, localhost, an IPv6
  // address), as runtimes decide: "Team/app" is a repository name, and not lowercase.
  const domain = `(?:${dotted}+${port}?|${dotted}*${port}|localhost${port}?|\\[[a-fA-F0-9:]+\\]${port}?)`;
  const pathComponent = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
  const name = `(?:${domain}/)?${pathComponent}(?:/${pathComponent})*`;
  const tag = '[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}';
  const digest = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
  return `^${name}(?::${tag})?(?:@${digest})?$`;
})();

/** What a user reads when an image reference does not parse. */
export const IMAGE_REFERENCE_HINT =
  'an image reference: [host[:port]/]name[:tag][@sha256:<64 hex digits>], the name in lowercase (e.g. "nginx:1.27", "registry.example.com/team/app@sha256:…")';
