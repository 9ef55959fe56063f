// What the constructs know of the operator's install without importing the operator chart (which
// imports the kinds): its default namespace, and how a MySQLCluster's NetworkPolicy names its pods.

/** The namespace the operator installs into unless told otherwise. */
export const DEFAULT_OPERATOR_NAMESPACE = 'recon8s-system';

/**
 * The operator's pods, as a MySQLCluster's NetworkPolicy admits them to its members (the controller
 * opens SQL sessions to every member and asks each agent what it reads). The controller fills this from
 * its own install (`--operator-namespace`, default `$POD_NAMESPACE`, and `--operator-pod-labels`).
 */
export interface OperatorPods {
  /** The operator's namespace, selected by its `kubernetes.io/metadata.name` label. */
  readonly namespace: string;
  /**
   * The labels of the controller's pods within that namespace.
   * @default every pod of the namespace
   */
  readonly podLabels?: Readonly<Record<string, string>>;
}

/** Where the operator runs when the controller says nothing: the default install's namespace, any pod of it. */
export const DEFAULT_OPERATOR_PODS: OperatorPods = { namespace: DEFAULT_OPERATOR_NAMESPACE };
