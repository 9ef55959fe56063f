// Where the members run (spec.placement): spread over nodes by pod anti-affinity, and over zones by a
// topology spread constraint when asked. What each choice costs is in docs/mysql-ha.md#placement.
import type { k8s } from 'cdk8s-plus-28';
import { HOSTNAME_TOPOLOGY_KEY, preferredAntiAffinity } from '../common/security.js';
import { ZONE_TOPOLOGY_KEY } from './spec.js';
import type { ResolvedMySQLClusterSpec, ResolvedMySQLPlacement } from './spec.generated.js';

/**
 * spec.affinity's parts each replace ours (a nodeAffinity of the user's keeps the members spread);
 * ours is the podAntiAffinity placement.spreadMembers says.
 */
export function memberAffinity(
  spec: Pick<ResolvedMySQLClusterSpec, 'affinity' | 'placement'>,
  selector: Readonly<Record<string, string>>,
): k8s.Affinity {
  return { ...antiAffinity(spec.placement.spreadMembers, selector), ...spec.affinity };
}

function antiAffinity(spread: ResolvedMySQLPlacement['spreadMembers'], selector: Readonly<Record<string, string>>) {
  switch (spread) {
    case 'Preferred':
      return preferredAntiAffinity(selector);
    case 'Required':
      return {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { topologyKey: HOSTNAME_TOPOLOGY_KEY, labelSelector: { matchLabels: { ...selector } } },
          ],
        },
      };
  }
}

/** None unless placement.zoneSpread asks: at most one member more in a zone than in another. */
export function memberTopologySpread(
  placement: ResolvedMySQLPlacement,
  selector: Readonly<Record<string, string>>,
): k8s.TopologySpreadConstraint[] | undefined {
  if (placement.zoneSpread === 'None') return undefined;
  return [
    {
      topologyKey: ZONE_TOPOLOGY_KEY,
      maxSkew: 1,
      whenUnsatisfiable: placement.zoneSpread === 'Required' ? 'DoNotSchedule' : 'ScheduleAnyway',
      labelSelector: { matchLabels: { ...selector } },
      // A zone whose nodes all carry a taint the members do not tolerate (unreachable, out of service)
      // is not a zone they can go to: counting it would hold a re-created member Pending for good.
      nodeTaintsPolicy: 'Honor',
    },
  ];
}
