// The Helm chart of the operator install, generated from the OperatorChart construct, so that the
// construct stays the one source of truth (test/integration/helm-chart.test.ts renders the chart with
// `helm template` and compares it, object by object, with the construct for the same settings).
//
// How: the construct is synthesized with a sentinel for every setting a value controls; each
// sentinel is swapped for a token in the objects, the objects are written as YAML, and the tokens
// become template expressions. What a value switches on or off (the PodDisruptionBudget and the
// anti-affinity with more than one replica, a RoleBinding per credentials namespace, the
// ServiceMonitor, the --namespaces flag) is wrapped in `if`/`range`. The CRDs go to crds/, which Helm
// installs but never deletes: uninstalling the chart must not delete every App and MySQLCluster.
import { Testing } from 'cdk8s';
import { stringify } from 'yaml';
import type { OperatorChartProps } from '../constructs/index.js';
import {
  DEFAULT_OPERATOR_IMAGE,
  DEFAULT_OPERATOR_NAMESPACE,
  DEFAULT_OPERATOR_REPLICAS,
  DEFAULT_OPERATOR_RESOURCES,
  OperatorChart,
} from '../constructs/index.js';

/** The chart's values, and the construct props each one stands for. */
export interface HelmValues {
  readonly namespace: string;
  readonly image: string;
  readonly imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  readonly replicas: number;
  readonly resources: NonNullable<OperatorChartProps['resources']>;
  readonly watchedNamespaces: readonly string[];
  readonly credentialsNamespaces: readonly string[];
  readonly serviceMonitor: boolean;
}

export const DEFAULT_HELM_VALUES: HelmValues = {
  namespace: DEFAULT_OPERATOR_NAMESPACE,
  image: DEFAULT_OPERATOR_IMAGE,
  imagePullPolicy: 'IfNotPresent',
  replicas: DEFAULT_OPERATOR_REPLICAS,
  resources: DEFAULT_OPERATOR_RESOURCES,
  watchedNamespaces: [],
  credentialsNamespaces: [],
  serviceMonitor: false,
};

/** The construct props that give the same objects as these values. */
export function propsFor(values: HelmValues): OperatorChartProps {
  return { ...values };
}

const SENTINEL = {
  namespace: 'helm-sentinel-namespace',
  image: 'helm.sentinel.invalid/image:tag',
  credentialsNamespace: 'helm-sentinel-credentials',
  watchedNamespace: 'helm-sentinel-watched',
  replicas: 7,
} as const;

// Tokens stand for template text in the YAML; quoted, since YAML quotes what starts with "{".
const TOKEN = {
  namespace: '__R8S_NAMESPACE__',
  image: '__R8S_IMAGE__',
  pullPolicy: '__R8S_PULL_POLICY__',
  replicas: '__R8S_REPLICAS__',
  resources: '__R8S_RESOURCES__',
  affinity: '__R8S_AFFINITY__',
  namespacesArg: '__R8S_NAMESPACES_ARG__',
  credentialsNamespace: '__R8S_CREDENTIALS_NAMESPACE__',
} as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The objects with every sentinel string swapped for its token. */
function tokenize(value: Json): Json {
  if (typeof value === 'string') {
    if (value === SENTINEL.namespace) return TOKEN.namespace;
    if (value === SENTINEL.image) return TOKEN.image;
    if (value === SENTINEL.credentialsNamespace) return TOKEN.credentialsNamespace;
    return value;
  }
  if (Array.isArray(value)) return value.map(tokenize);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, tokenize(v)]));
  return value;
}

interface Doc {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly [key: string]: Json;
}

/** The YAML of one object, its tokens turned into template text; `affinity` is the YAML of the Deployment's anti-affinity. */
function template(doc: Json, affinity: string): string {
  const expr = (e: string): string => `{{ ${e} }}`;
  const lines = stringify(doc, { lineWidth: 0 })
    .trimEnd()
    .split('\n')
    .map((line) => {
      const key = line.trimStart();
      const indent = ' '.repeat(line.length - key.length);
      // Whole lines: a block from the values, or what a value switches on.
      if (key === `resources: ${TOKEN.resources}`)
        return `${indent}resources:\n${indent}  {{- toYaml $.Values.resources | nindent ${indent.length + 2} }}`;
      if (key === `affinity: ${TOKEN.affinity}`) {
        const block = affinity
          .split('\n')
          .map((l) => `${indent}${l}`)
          .join('\n');
        return `${indent}{{- if gt (int $.Values.replicas) 1 }}\n${block}\n${indent}{{- end }}`;
      }
      if (key === `- ${TOKEN.namespacesArg}`) {
        return `${indent}{{- if $.Values.watchedNamespaces }}\n${indent}- --namespaces={{ join "," $.Values.watchedNamespaces }}\n${indent}{{- end }}`;
      }
      return line;
    });
  return `${lines
    .join('\n')
    .replaceAll(TOKEN.namespace, expr('$.Values.namespace'))
    .replaceAll(TOKEN.image, expr('$.Values.image'))
    .replaceAll(TOKEN.pullPolicy, expr('$.Values.imagePullPolicy'))
    .replaceAll(TOKEN.replicas, expr('$.Values.replicas'))
    .replaceAll(TOKEN.credentialsNamespace, expr('.'))}\n`;
}

/** Every file of the chart, by path relative to the chart directory. */
export function helmChart(version: string): Record<string, string> {
  const synth = (props: OperatorChartProps): Doc[] =>
    Testing.synth(new OperatorChart(Testing.app(), 'install', props)) as Doc[];
  const all = synth({
    namespace: SENTINEL.namespace,
    image: SENTINEL.image,
    imagePullPolicy: 'Never',
    replicas: SENTINEL.replicas,
    credentialsNamespaces: [SENTINEL.credentialsNamespace],
    watchedNamespaces: [SENTINEL.watchedNamespace],
    serviceMonitor: true,
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
        template: { spec: { affinity?: Json; containers: Record<string, Json>[] } };
      };
      spec.replicas = TOKEN.replicas;
      const pod = spec.template.spec;
      affinity = stringify({ affinity: pod.affinity ?? null }, { lineWidth: 0 }).trimEnd();
      pod.affinity = TOKEN.affinity;
      const container = pod.containers[0] ?? {};
      container.imagePullPolicy = TOKEN.pullPolicy;
      container.resources = TOKEN.resources;
      // The construct puts --namespaces last: it becomes what watchedNamespaces switches on.
      const args = (container.args ?? []) as string[];
      container.args = [...args.filter((a) => !a.startsWith('--namespaces=')), TOKEN.namespacesArg];
    }
    const text = template(doc, affinity);
    if (doc.kind === 'PodDisruptionBudget')
      templates.push(`{{- if gt (int .Values.replicas) 1 }}\n---\n${text}{{- end }}\n`);
    else if (doc.kind === 'ServiceMonitor')
      templates.push(`{{- if .Values.serviceMonitor }}\n---\n${text}{{- end }}\n`);
    else if (doc.kind === 'RoleBinding' && original.metadata.namespace === SENTINEL.credentialsNamespace) {
      templates.push(`{{- range .Values.credentialsNamespaces }}\n---\n${text}{{- end }}\n`);
    } else templates.push(`---\n${text}`);
  }

  const values = stringify({
    // Where the operator runs (a Namespace with Pod Security "restricted" is part of the chart).
    namespace: DEFAULT_HELM_VALUES.namespace,
    image: DEFAULT_HELM_VALUES.image,
    imagePullPolicy: DEFAULT_HELM_VALUES.imagePullPolicy,
    replicas: DEFAULT_HELM_VALUES.replicas,
    resources: DEFAULT_HELM_VALUES.resources,
    watchedNamespaces: [],
    credentialsNamespaces: [],
    serviceMonitor: false,
  });
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
    'values.yaml': `# Generated from recon8s.OperatorChart (apps/helm-chart.ts); each value is the construct prop of the same name.\n${values}`,
    'crds/recon8s.dev.yaml': crds.join(''),
    'templates/install.yaml': templates.join(''),
  };
}
