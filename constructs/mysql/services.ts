// The Services of a cluster: one for the members' identities, one for writes, one for reads.
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import type { MySQLClusterContext } from './context.js';
import { objectMeta } from './context.js';
import { DATABASE_COMPONENT, MYSQL_PORT, MYSQL_PORT_NAME, ROLES, ROLE_LABEL, databaseSelector } from './layout.js';

export interface MySQLServices {
  readonly headless: k8s.KubeService;
  readonly primary: k8s.KubeService;
  readonly replicas: k8s.KubeService;
}

export function services(scope: Construct, ctx: MySQLClusterContext): MySQLServices {
  const { names } = ctx;
  const selector = databaseSelector(names.cluster);
  const ports: k8s.ServicePort[] = [
    { name: MYSQL_PORT_NAME, port: MYSQL_PORT, targetPort: k8s.IntOrString.fromString(MYSQL_PORT_NAME) },
  ];
  return {
    // Gives every member its DNS name, <cluster>-N.<cluster>-headless. Not-ready members are
    // published too: a replica being bootstrapped must reach the primary by name, and the primary
    // is the clone donor before anything is ready.
    headless: new k8s.KubeService(scope, 'HeadlessService', {
      metadata: objectMeta(ctx, names.headlessService, DATABASE_COMPONENT),
      spec: { clusterIp: 'None', publishNotReadyAddresses: true, selector, ports },
    }),
    // Writes: the one member the controller labelled primary, wherever it is.
    primary: new k8s.KubeService(scope, 'PrimaryService', {
      metadata: objectMeta(ctx, names.primaryService, DATABASE_COMPONENT),
      spec: { selector: { ...selector, [ROLE_LABEL]: ROLES.primary }, ports },
    }),
    // Reads: the ready replicas that follow the primary (never a member holding errant transactions).
    replicas: new k8s.KubeService(scope, 'ReplicasService', {
      metadata: objectMeta(ctx, names.replicasService, DATABASE_COMPONENT),
      spec: { selector: { ...selector, [ROLE_LABEL]: ROLES.replica }, ports },
    }),
  };
}
