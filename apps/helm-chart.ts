// The Helm chart of the operator install, generated from the OperatorChart construct, so that the
// construct stays the one source of truth (test/integration/helm-chart.test.ts renders the chart with
// `helm template` and compares it, object by object, with the construct for the same settings).
//
// How: the construct is synthesized with a sentinel for every setting a value or the release controls;
// each sentinel is swapped for a token in the objects, the objects are written as YAML, and the tokens
// become template expressions. What a value switches on or off (the PodDisruptionBudget and the default
// anti-affinity with more than one replica, a RoleBinding per credentials namespace, the ClusterRole's
// RoleBinding per watched namespace or else its ClusterRoleBinding, the ServiceMonitor, the --namespaces
// flag, the scheduling fields) is wrapped in `if`/`with`/`range`. The CRDs go to crds/,
// which Helm installs when they are missing and never deletes: uninstalling the chart must not delete
// every App and MySQLCluster, and a second release finds them there and goes on.
//
// The release decides where and under which names: objects in `.Release.Namespace` (the chart creates
// no Namespace: `helm install --create-namespace` does), named after `.Release.Name`, and cluster-scoped
// ones `<namespace>:<release>` (no release name or namespace has a ":", so two releases never share one).
import { Document, isMap, isScalar, stringify } from 'yaml';
import type { OperatorChartProps } from '../constructs/index.js';
import {
  ALLOW_ANY,
  ALLOW_LIST_ENTRY_HINT,
  ALLOW_LIST_ENTRY_PATTERN,
  DEFAULT_OPERATOR_IMAGE,
  DEFAULT_OPERATOR_REPLICAS,
  DEFAULT_OPERATOR_RESOURCES,
  OperatorChart,
} from '../constructs/index.js';
import { App } from 'cdk8s';
import type { k8s } from 'cdk8s-plus-28';

/** The chart's values; each is the construct prop of the same name. */
export interface HelmValues {
  readonly image: string;
  readonly imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  readonly imagePullSecrets: readonly string[];
  readonly replicas: number;
  readonly resources: NonNullable<OperatorChartProps['resources']>;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly k8s.Toleration[];
  /** `{}`: the construct's default (anti-affinity with more than one replica). */
  readonly affinity: k8s.Affinity;
  readonly watchedNamespaces: readonly string[];
  readonly credentialsNamespaces: readonly string[];
  readonly appServiceAccounts: readonly string[];
  readonly appSecrets: readonly string[];
  readonly serviceMonitor: boolean;
  readonly prometheusRule: boolean;
  readonly podMonitor: boolean;
  readonly grafanaDashboard: boolean;
}

/** What `helm install NAME -n NAMESPACE` gives the chart. */
export interface HelmRelease {
  readonly name: string;
  readonly namespace: string;
}

export const DEFAULT_HELM_VALUES: HelmValues = {
  image: DEFAULT_OPERATOR_IMAGE,
  imagePullPolicy: 'IfNotPresent',
  imagePullSecrets: [],
  replicas: DEFAULT_OPERATOR_REPLICAS,
  resources: DEFAULT_OPERATOR_RESOURCES,
  nodeSelector: {},
  tolerations: [],
  affinity: {},
  watchedNamespaces: [],
  credentialsNamespaces: [],
  appServiceAccounts: [...ALLOW_ANY],
  appSecrets: [...ALLOW_ANY],
  serviceMonitor: false,
  prometheusRule: false,
  podMonitor: false,
  grafanaDashboard: false,
};

const VALUE_COMMENTS: Readonly<Record<keyof HelmValues, string>> = {
  image: 'The controller image (build it from the Dockerfile).',
  imagePullPolicy: 'Always, IfNotPresent or Never.',
  imagePullSecrets: 'Names of Secrets in the release namespace to pull the image with.',
  replicas: 'Controller pods; one leads at a time (a Lease), the others wait with a warm cache.',
  resources: 'The controller container; no CPU limit by default (it throttles without protecting anything).',
  nodeSelector: 'Node labels the controller pods require.',
  tolerations: 'Taints the controller pods tolerate.',
  affinity: 'Replaces the default: with more than one replica, a preferred anti-affinity across nodes.',
  watchedNamespaces:
    'Namespaces the controller watches; [] = all. Several releases in one cluster: give each its own (the chart refuses an overlap).',
  credentialsNamespaces:
    'Namespaces where MySQLClusters may get and create their credentials Secret (each must exist first).',
  appServiceAccounts:
    'The ServiceAccounts an App may run as: "*" (any), "NAMESPACE/*", "NAME" or "NAMESPACE/NAME"; [] = only the namespace default (docs/security.md).',
  appSecrets:
    "The Secrets an App's pods may name (env, image pull Secrets), likewise; [] = none but the App's own database binding.",
  serviceMonitor: 'A Prometheus Operator ServiceMonitor (its CRD must exist).',
  prometheusRule:
    "A Prometheus Operator PrometheusRule with recon8s's alerts (its CRD must exist; docs/monitoring.md: Alerts).",
  podMonitor:
    'A Prometheus Operator PodMonitor for the metrics sidecar of every MySQLCluster with spec.monitoring.enabled (its CRD must exist; docs/monitoring.md).',
  grafanaDashboard:
    'recon8s\'s Grafana dashboard in a ConfigMap labelled grafana_dashboard: "1" for Grafana\'s dashboard sidecar (docs/monitoring.md).',
};

/** The names `helm install` gives a release's cluster-scoped objects. */
export function clusterScopedName(release: HelmRelease): string {
  return `${release.namespace}:${release.name}`;
}

/** The construct props that give the same objects as these values in this release. */
export function propsFor(values: HelmValues, release: HelmRelease): OperatorChartProps {
  const { affinity, ...rest } = values;
  return {
    ...rest,
    affinity: Object.keys(affinity).length > 0 ? affinity : undefined,
    namespace: release.namespace,
    name: release.name,
    clusterScopedName: clusterScopedName(release),
    createNamespace: false,
  };
}

const SENTINEL = {
  namespace: 'helm-sentinel-ns',
  name: 'helm-sentinel-release',
  image: 'helm.sentinel.invalid/image:tag',
  credentialsNamespace: 'helm-sentinel-credentials',
  watchedNamespace: 'helm-sentinel-watched',
  replicas: 7,
} as const;

// Tokens stand for template text in the YAML; quoted, since YAML quotes what starts with "{".
const TOKEN = {
  namespace: '__R8S_NAMESPACE__',
  name: '__R8S_NAME__',
  image: '__R8S_IMAGE__',
  pullPolicy: '__R8S_PULL_POLICY__',
  replicas: '__R8S_REPLICAS__',
  resources: '__R8S_RESOURCES__',
  affinity: '__R8S_AFFINITY__',
  nodeSelector: '__R8S_NODE_SELECTOR__',
  tolerations: '__R8S_TOLERATIONS__',
  imagePullSecrets: '__R8S_IMAGE_PULL_SECRETS__',
  namespacesArg: '__R8S_NAMESPACES_ARG__',
  appServiceAccountsArg: '__R8S_APP_SERVICE_ACCOUNTS_ARG__',
  appSecretsArg: '__R8S_APP_SECRETS_ARG__',
  /** The namespace a `range` over credentialsNamespaces or watchedNamespaces is at. */
  rangeNamespace: '__R8S_RANGE_NAMESPACE__',
} as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The objects with every sentinel swapped for its token (release names also inside longer strings). */
function tokenize(value: Json): Json {
  if (typeof value === 'string') {
    if (value === SENTINEL.image) return TOKEN.image;
    if (value === SENTINEL.credentialsNamespace || value === SENTINEL.watchedNamespace) return TOKEN.rangeNamespace;
    return value.replaceAll(SENTINEL.namespace, TOKEN.namespace).replaceAll(SENTINEL.name, TOKEN.name);
  }
  if (Array.isArray(value)) return value.map(tokenize);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, tokenize(v)]));
  return value;
}

interface Doc {
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
  readonly [key: string]: Json;
}

/** The YAML of one object, its tokens turned into template text; `affinity` is the YAML of the default anti-affinity. */
function template(doc: Json, affinity: string): string {
  const expr = (e: string): string => `{{ ${e} }}`;
  /** A block value from the values, under `key`, only when set. */
  const withBlock = (indent: string, key: string, value: string): string =>
    `${indent}{{- with $.Values.${value} }}\n${indent}${key}:\n${indent}  {{- toYaml . | nindent ${indent.length + 2} }}\n${indent}{{- end }}`;
  // A name made from the release is quoted whole: a release named "123" stays a string.
  const quoteRelease = (line: string): string =>
    line.replace(/^(\s*(?:- |[^:]+: ))(\S*__R8S_(?:NAME|NAMESPACE)__\S*)$/, '$1"$2"');
  const lines = stringify(doc, { lineWidth: 0 })
    .trimEnd()
    // Text of the object that looks like a template action (the alerts' own {{ $labels.x }}) is
    // written out by Helm as it is, not run.
    .replaceAll('{{', '{{ "{{" }}')
    .split('\n')
    .map((line) => {
      const key = line.trimStart();
      const indent = ' '.repeat(line.length - key.length);
      // Whole lines: a block from the values, or what a value switches on.
      if (key === `resources: ${TOKEN.resources}`)
        return `${indent}resources:\n${indent}  {{- toYaml $.Values.resources | nindent ${indent.length + 2} }}`;
      if (key === `nodeSelector: ${TOKEN.nodeSelector}`) return withBlock(indent, 'nodeSelector', 'nodeSelector');
      if (key === `tolerations: ${TOKEN.tolerations}`) return withBlock(indent, 'tolerations', 'tolerations');
      if (key === `imagePullSecrets: ${TOKEN.imagePullSecrets}`) {
        return `${indent}{{- with $.Values.imagePullSecrets }}\n${indent}imagePullSecrets:\n${indent}  {{- range . }}\n${indent}  - name: {{ . | quote }}\n${indent}  {{- end }}\n${indent}{{- end }}`;
      }
      if (key === `affinity: ${TOKEN.affinity}`) {
        const block = affinity
          .split('\n')
          .map((l) => quoteRelease(`${indent}${l}`))
          .join('\n');
        return `${indent}{{- if $.Values.affinity }}\n${indent}affinity:\n${indent}  {{- toYaml $.Values.affinity | nindent ${indent.length + 2} }}\n${indent}{{- else if gt (int $.Values.replicas) 1 }}\n${block}\n${indent}{{- end }}`;
      }
      // An allow-list that allows everything needs no flag (the controller's default).
      for (const [token, value, flag] of [
        [TOKEN.appServiceAccountsArg, 'appServiceAccounts', '--app-service-accounts'],
        [TOKEN.appSecretsArg, 'appSecrets', '--app-secrets'],
      ] as const) {
        if (key === `- ${token}`)
          return `${indent}{{- if not (has "*" $.Values.${value}) }}\n${indent}- ${flag}={{ join "," $.Values.${value} }}\n${indent}{{- end }}`;
      }
      if (key === `- ${TOKEN.namespacesArg}`) {
        return `${indent}{{- if $.Values.watchedNamespaces }}\n${indent}- --namespaces={{ join "," $.Values.watchedNamespaces }}\n${indent}{{- end }}`;
      }
      return quoteRelease(line);
    });
  return `${lines
    .join('\n')
    .replaceAll(TOKEN.namespace, expr('$.Release.Namespace'))
    .replaceAll(TOKEN.name, expr('$.Release.Name'))
    .replaceAll(TOKEN.image, expr('$.Values.image'))
    .replaceAll(TOKEN.pullPolicy, expr('$.Values.imagePullPolicy'))
    .replaceAll(TOKEN.replicas, expr('$.Values.replicas'))
    .replaceAll(TOKEN.rangeNamespace, expr('. | quote'))}\n`;
}

// What no construct can know: the other installs in the cluster, and whether the release's name can
// name a Service. `lookup` sees nothing under `helm template` and `--dry-run`, so this guards real
// installs and upgrades only (test/e2e/install-helm.test.ts proves it).
const GUARD = `{{- /* Generated by apps/helm-chart.ts. Refuses a release that would fight another recon8s install. */ -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .Release.Name) }}
{{- fail (printf "release name %q: expected a DNS label (it names a Deployment and the Service %s-metrics)" .Release.Name .Release.Name) }}
{{- end }}
{{- range $value := list "appServiceAccounts" "appSecrets" }}
{{- range $e := get $.Values $value | default list }}
{{- if not (regexMatch ${JSON.stringify(ALLOW_LIST_ENTRY_PATTERN)} $e) }}
{{- fail (printf "%s: %q is not an allow-list entry: expected ${ALLOW_LIST_ENTRY_HINT.replaceAll('"', '\\"')}" $value $e) }}
{{- end }}
{{- end }}
{{- end }}
{{- $mine := .Values.watchedNamespaces | default list }}
{{- if $mine }}
{{- range $n := .Values.credentialsNamespaces | default list }}
{{- if not (has $n $mine) }}
{{- fail (printf "credentialsNamespaces: %q is not one of watchedNamespaces (%s): the controller would hold Secrets of a namespace it never reconciles" $n (join ", " $mine)) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $d := get (lookup "apps/v1" "Deployment" "" "") "items" | default list }}
{{- $labels := get $d.metadata "labels" | default dict }}
{{- $self := and (eq $d.metadata.namespace $.Release.Namespace) (eq $d.metadata.name $.Release.Name) }}
{{- if and (not $self) (eq (get $labels "app.kubernetes.io/part-of") "recon8s") (eq (get $labels "app.kubernetes.io/component") "controller") }}
{{- $theirs := list }}
{{- range $c := $d.spec.template.spec.containers }}
{{- range $a := get $c "args" | default list }}
{{- if hasPrefix "--namespaces=" $a }}{{ $theirs = splitList "," (trimPrefix "--namespaces=" $a) }}{{ end }}
{{- end }}
{{- end }}
{{- $where := printf "the recon8s controller %s/%s" $d.metadata.namespace $d.metadata.name }}
{{- if not $theirs }}
{{- fail (printf "%s watches every namespace: two controllers would apply and prune the same children. Give each install its own watchedNamespaces (that one included)." $where) }}
{{- else if not $mine }}
{{- fail (printf "watchedNamespaces is empty (every namespace), but %s watches %s: set watchedNamespaces to namespaces no other install watches." $where (join "," $theirs)) }}
{{- end }}
{{- range $n := $mine }}
{{- if has $n $theirs }}
{{- fail (printf "watchedNamespaces: %s is watched by %s already: two controllers would apply and prune the same children." $n $where) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
`;

/** Every file of the chart, by path relative to the chart directory. */
export function helmChart(version: string): Record<string, string> {
  // Apps of their own, never written to disk (cdk8s's Testing.app() would leave a temporary directory).
  const synth = (watchedNamespaces: readonly string[]): Doc[] =>
    new OperatorChart(new App(), 'install', {
      ...propsFor(
        {
          ...DEFAULT_HELM_VALUES,
          image: SENTINEL.image,
          imagePullPolicy: 'Never',
          replicas: SENTINEL.replicas,
          credentialsNamespaces: [SENTINEL.credentialsNamespace],
          watchedNamespaces,
          serviceMonitor: true,
          prometheusRule: true,
          podMonitor: true,
          grafanaDashboard: true,
        },
        { name: SENTINEL.name, namespace: SENTINEL.namespace },
      ),
    }).toJson() as Doc[];
  // Watching namespaces: a RoleBinding of the ClusterRole in each (the credentials namespace must be one
  // of them: only the watched sentinel's is kept). Watching all: the ClusterRoleBinding instead.
  const watching = synth([SENTINEL.watchedNamespace, SENTINEL.credentialsNamespace]);
  // (The node reader's ClusterRoleBinding is in both: Nodes and PersistentVolumes have no namespace.)
  const watchedBinding = clusterScopedName({ name: SENTINEL.name, namespace: SENTINEL.namespace });
  const clusterRoleBinding = synth([]).find(
    (d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === watchedBinding,
  );
  const all = watching.flatMap((d) => {
    if (d.kind !== 'RoleBinding' || d.metadata.name !== watchedBinding) return [d];
    if (d.metadata.namespace !== SENTINEL.watchedNamespace) return [];
    return clusterRoleBinding ? [d, clusterRoleBinding] : [d];
  });

  const crds: string[] = [];
  const templates: string[] = [];
  for (const original of all) {
    if (original.kind === 'CustomResourceDefinition') {
      crds.push(`---\n${stringify(original, { lineWidth: 0 })}`);
      continue;
    }
    const doc = tokenize(structuredClone(original) as unknown as Json) as unknown as Doc & Record<string, Json>;
    let affinity = '';
    if (doc.kind === 'Deployment') {
      const spec = doc.spec as {
        replicas: Json;
        template: { spec: Record<string, Json> & { containers: Record<string, Json>[] } };
      };
      spec.replicas = TOKEN.replicas;
      const pod = spec.template.spec;
      affinity = stringify({ affinity: pod.affinity ?? null }, { lineWidth: 0 }).trimEnd();
      pod.affinity = TOKEN.affinity;
      pod.nodeSelector = TOKEN.nodeSelector;
      pod.tolerations = TOKEN.tolerations;
      pod.imagePullSecrets = TOKEN.imagePullSecrets;
      const container = pod.containers[0] ?? {};
      container.imagePullPolicy = TOKEN.pullPolicy;
      container.resources = TOKEN.resources;
      // The construct puts these last, in this order: each becomes what its value switches on.
      const switched = ['--app-service-accounts=', '--app-secrets=', '--namespaces='];
      const args = (container.args ?? []) as string[];
      container.args = [
        ...args.filter((a) => !switched.some((f) => a.startsWith(f))),
        TOKEN.appServiceAccountsArg,
        TOKEN.appSecretsArg,
        TOKEN.namespacesArg,
      ];
    }
    const text = template(doc, affinity);
    if (doc.kind === 'PodDisruptionBudget')
      templates.push(`{{- if gt (int .Values.replicas) 1 }}\n---\n${text}{{- end }}\n`);
    else if (doc.kind === 'ServiceMonitor')
      templates.push(`{{- if .Values.serviceMonitor }}\n---\n${text}{{- end }}\n`);
    else if (doc.kind === 'PrometheusRule')
      templates.push(`{{- if .Values.prometheusRule }}\n---\n${text}{{- end }}\n`);
    else if (doc.kind === 'PodMonitor') templates.push(`{{- if .Values.podMonitor }}\n---\n${text}{{- end }}\n`);
    else if (doc.kind === 'ConfigMap' && original.metadata.labels?.grafana_dashboard === '1')
      templates.push(`{{- if .Values.grafanaDashboard }}\n---\n${text}{{- end }}\n`);
    else if (doc.kind === 'RoleBinding' && original.metadata.namespace === SENTINEL.credentialsNamespace) {
      templates.push(`{{- range .Values.credentialsNamespaces }}\n---\n${text}{{- end }}\n`);
    } else if (doc.kind === 'RoleBinding' && original.metadata.namespace === SENTINEL.watchedNamespace) {
      templates.push(`{{- range .Values.watchedNamespaces }}\n---\n${text}{{- end }}\n`);
    } else if (doc.kind === 'ClusterRoleBinding' && original.metadata.name === watchedBinding) {
      templates.push(`{{- if not .Values.watchedNamespaces }}\n---\n${text}{{- end }}\n`);
    } else templates.push(`---\n${text}`);
  }

  const values = new Document(DEFAULT_HELM_VALUES);
  if (isMap(values.contents))
    for (const pair of values.contents.items)
      if (isScalar(pair.key)) pair.key.commentBefore = ` ${VALUE_COMMENTS[String(pair.key.value) as keyof HelmValues]}`;
  return {
    'Chart.yaml': stringify({
      apiVersion: 'v2',
      name: 'recon8s',
      version,
      appVersion: version,
      type: 'application',
      description:
        'The recon8s operator: App and MySQLCluster (recon8s.dev/v1alpha1), generated from recon8s.OperatorChart',
    }),
    'values.yaml': `# Generated from recon8s.OperatorChart (apps/helm-chart.ts); each value is the construct prop of the same name.\n# The release gives the namespace (helm install NAME -n NAMESPACE --create-namespace) and the names.\n${values.toString({ lineWidth: 0 })}`,
    'crds/recon8s.dev.yaml': crds.join(''),
    'templates/guard.yaml': GUARD,
    'templates/install.yaml': templates.join(''),
  };
}
