import type { k8s } from 'cdk8s-plus-28';

/**
 * A container security context that passes the Pod Security "restricted" profile: no privilege
 * escalation, every capability dropped, the runtime's default seccomp profile, and non-root unless
 * the caller explicitly runs as root.
 */
export function containerSecurityContext(opts: {
  readonly runAsNonRoot: boolean;
  readonly readOnlyRootFilesystem: boolean;
}): k8s.SecurityContext {
  return {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    readOnlyRootFilesystem: opts.readOnlyRootFilesystem,
    runAsNonRoot: opts.runAsNonRoot,
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** The pod-level identity: an explicit uid/gid, so runAsNonRoot never depends on the image's USER. */
export function podSecurityContext(opts: {
  readonly runAsUser: number;
  readonly runAsGroup: number;
  readonly fsGroup?: number;
  readonly runAsNonRoot: boolean;
}): k8s.PodSecurityContext {
  return {
    runAsUser: opts.runAsUser,
    runAsGroup: opts.runAsGroup,
    ...(opts.fsGroup !== undefined ? { fsGroup: opts.fsGroup } : {}),
    runAsNonRoot: opts.runAsNonRoot,
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** The node label that names each node: a topology of one node per domain. */
export const HOSTNAME_TOPOLOGY_KEY = 'kubernetes.io/hostname';

/** Spread pods of one instance over nodes when the scheduler can, without ever refusing to schedule. */
export function preferredAntiAffinity(selector: Readonly<Record<string, string>>): k8s.Affinity {
  return {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: { topologyKey: HOSTNAME_TOPOLOGY_KEY, labelSelector: { matchLabels: { ...selector } } },
        },
      ],
    },
  };
}
