// Labels and annotations of rendered objects. Selectors use only the stable app.kubernetes.io labels:
// selectors are immutable once applied, so they never depend on construct paths or user labels.
export const MANAGED_BY = 'recon8s';

/**
 * On the pods of an App bound to a MySQLCluster (App spec.database): the cluster's name. The cluster's
 * NetworkPolicy admits the pods carrying it to 3306; the App construct sets it, never the user's labels.
 */
export const BOUND_CLUSTER_LABEL = 'recon8s.dev/mysql-cluster';

export interface InstanceLabels {
  /** app.kubernetes.io/name: what the thing is (the App's name, or "mysql"). */
  readonly name: string;
  /** app.kubernetes.io/instance: which one (the resource's name). */
  readonly instance: string;
  /** app.kubernetes.io/component, when the instance has parts that must be told apart. */
  readonly component?: string;
}

/** The labels pods are selected by. Never change these for an existing kind: selectors are immutable. */
export function selectorLabels(l: InstanceLabels): Record<string, string> {
  return {
    'app.kubernetes.io/name': l.name,
    'app.kubernetes.io/instance': l.instance,
    ...(l.component ? { 'app.kubernetes.io/component': l.component } : {}),
  };
}

/** The labels every rendered object carries: the user's, then ours (ours win; the spec refuses clashes). */
export function objectLabels(l: InstanceLabels, user?: Readonly<Record<string, string>>): Record<string, string> {
  return { ...(user ?? {}), ...selectorLabels(l), 'app.kubernetes.io/managed-by': MANAGED_BY };
}

/** User annotations, or undefined so that no empty map is emitted (an empty map would be a field we own). */
export function objectAnnotations(user?: Readonly<Record<string, string>>): Record<string, string> | undefined {
  return user && Object.keys(user).length > 0 ? { ...user } : undefined;
}
