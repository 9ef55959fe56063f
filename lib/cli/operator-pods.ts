// Who the operator's pods are (--operator-namespace, --operator-pod-labels), which a MySQLCluster's
// NetworkPolicy admits to its members: the controller renders with them, and so must render and diff,
// or they show the policy of another install than the one that reconciles.
import { DEFAULT_OPERATOR_PODS, DNS_LABEL_PATTERN, QUALIFIED_KEY_PATTERN } from '../../constructs/index.js';
import type { OperatorPods } from '../../constructs/index.js';
import { UsageError } from './usage-error.js';

/** The flags, as parseArgs takes them. */
export const OPERATOR_POD_OPTIONS = {
  'operator-namespace': { type: 'string' },
  'operator-pod-labels': { type: 'string' },
} as const;

/** The flags' lines of render's and diff's usage. */
export const OPERATOR_POD_USAGE = `  --operator-namespace NS            the namespace the operator runs in, which a MySQLCluster's
                                     NetworkPolicy admits (default: ${DEFAULT_OPERATOR_PODS.namespace}, the default install's);
                                     as the controller's flag of that name
  --operator-pod-labels K=V[,K=V...] the labels of the operator's pods there (default: any pod of that namespace)
`;

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/**
 * The controller's own pods, for the MySQLClusters' NetworkPolicies: the flags, else the namespace the
 * pod runs in (the downward API's $POD_NAMESPACE: the controller's own; render and diff, which run
 * outside the operator, pass none), else the default install's. A bad flag is a UsageError with `usage`.
 */
export function operatorPods(
  namespaceFlag: string | undefined,
  labelsFlag: string | undefined,
  podNamespace: string | undefined,
  usage: string,
): OperatorPods {
  const namespace = namespaceFlag ?? (podNamespace || DEFAULT_OPERATOR_PODS.namespace);
  if (!new RegExp(DNS_LABEL_PATTERN).test(namespace) || namespace.length > 63)
    throw new UsageError(`--operator-namespace must be a namespace name (a DNS label), got "${namespace}"`, usage);
  if (labelsFlag === undefined) return { namespace };
  const podLabels: Record<string, string> = {};
  for (const entry of labelsFlag.split(',').map((e) => e.trim())) {
    const at = entry.indexOf('=');
    const key = entry.slice(0, at);
    const value = entry.slice(at + 1);
    if (at < 1 || !new RegExp(QUALIFIED_KEY_PATTERN).test(key) || !LABEL_VALUE.test(value))
      throw new UsageError(
        `--operator-pod-labels must be KEY=VALUE pairs of label keys and values, comma-separated, got "${entry}"`,
        usage,
      );
    podLabels[key] = value;
  }
  return { namespace, podLabels };
}
