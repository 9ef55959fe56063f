import { render } from '../constructs/index.js';
import type { AppSpec, KubernetesObject, MySQLClusterSpec, Recon8sResource } from '../constructs/index.js';
import type { BenchWorkload } from './args.js';

export const GROUP_VERSION = 'recon8s.dev/v1alpha1';

/** One custom resource to create, and what the controller must render for it. */
export interface BenchResource {
  readonly kind: 'App' | 'MySQLCluster';
  readonly plural: 'apps' | 'mysqlclusters';
  readonly name: string;
  readonly spec: AppSpec | MySQLClusterSpec;
}

/** `Kind/name` of a custom resource or a child, within the bench namespace. */
export function refOf(kind: string, name: string): string {
  return `${kind}/${name}`;
}

/**
 * `realistic`: Apps of one realistic shape (Deployment + Service + PodDisruptionBudget; one in ten
 * autoscaled, which adds a HorizontalPodAutoscaler and leaves replicas out) and MySQLClusters with a
 * backup schedule (StatefulSet, three Services, two ConfigMaps, PodDisruptionBudget, CronJob),
 * interleaved so both kinds are created throughout. `peer-job`: Apps whose children are exactly the
 * peer's (a Deployment and a Service), the same spec otherwise.
 */
export function buildWorkload(apps: number, mysql: number, workload: BenchWorkload = 'realistic'): BenchResource[] {
  const out: { at: number; r: BenchResource }[] = [];
  for (let i = 0; i < apps; i++)
    out.push({
      at: i / Math.max(apps, 1),
      r: {
        kind: 'App',
        plural: 'apps',
        name: `app-${pad(i, apps)}`,
        spec: workload === 'peer-job' ? peerJobAppSpec(i) : appSpec(i),
      },
    });
  for (let i = 0; i < mysql; i++)
    out.push({
      at: (i + 0.5) / Math.max(mysql, 1),
      r: { kind: 'MySQLCluster', plural: 'mysqlclusters', name: `db-${pad(i, mysql)}`, spec: mysqlSpec(i) },
    });
  return out.sort((a, b) => a.at - b.at).map((x) => x.r);
}

/** An App the latency phase can change through spec.replicas (not autoscaled). */
export function hasFixedReplicas(r: BenchResource): boolean {
  return r.kind === 'App' && (r.spec as AppSpec).autoscaling === undefined;
}

export const INITIAL_REPLICAS = 2;

function appSpec(i: number): AppSpec {
  const autoscaled = i % 10 === 9;
  return {
    image: 'nginxinc/nginx-unprivileged:1.27-alpine',
    ...(autoscaled ? { autoscaling: { minReplicas: 2, maxReplicas: 6 } } : { replicas: INITIAL_REPLICAS }),
    env: [
      { name: 'GREETING', value: `hello-${i}` },
      { name: 'LOG_LEVEL', value: 'info' },
    ],
    resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } },
    ports: [{ name: 'http', port: 80, targetPort: 8080 }],
    readinessProbe: { httpGet: { path: '/', port: 'http' } },
    securityContext: { runAsUser: 101, runAsGroup: 101 },
  } as AppSpec;
}

/** What the peer renders in full: a Deployment and a Service, no PodDisruptionBudget, autoscaler or NetworkPolicy. */
function peerJobAppSpec(i: number): AppSpec {
  const { autoscaling: _autoscaling, ...rest } = appSpec(i);
  return {
    ...rest,
    replicas: INITIAL_REPLICAS,
    disruptionBudget: { enabled: false },
    networkPolicy: { enabled: false },
  } as AppSpec;
}

function mysqlSpec(i: number): MySQLClusterSpec {
  return {
    replicas: 3,
    version: '8.4',
    storage: { size: '20Gi' },
    mysqlConf: { max_connections: String(200 + i) },
    backup: { schedule: '0 3 * * *', persistentVolumeClaimName: `db-${i}-backups`, retain: 7 },
  } as MySQLClusterSpec;
}

/** The custom resource object as the bench creates it. */
export function resourceObject(r: BenchResource, namespace: string): Recon8sResource {
  return {
    apiVersion: GROUP_VERSION,
    kind: r.kind,
    metadata: { name: r.name, namespace },
    spec: r.spec,
  } as Recon8sResource;
}

/** render() of the resource in `namespace`. */
export function renderResource(r: BenchResource, namespace: string): KubernetesObject[] {
  return render(resourceObject(r, namespace));
}

function pad(i: number, n: number): string {
  return String(i).padStart(String(Math.max(n - 1, 0)).length, '0');
}
