// The App construct: one validated spec in, a Deployment and its companions out.
//
// L1 classes only (k8s.Kube*): the cdk8s-plus L2 classes hash names from the construct path, select
// on cdk8s.io/metadata.addr and add limits, pull policies and probes nobody asked for. Every field
// set below is one we mean to own under server-side apply; absent stays absent.
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';
import { refuseDuplicateObjects } from '../common/unique-objects.js';
import { BOUND_CLUSTER_LABEL, objectAnnotations, objectLabels, selectorLabels } from '../common/metadata.js';
import { resourceRequirements } from '../common/resources.js';
import { containerSecurityContext, podSecurityContext, preferredAntiAffinity } from '../common/security.js';
import { resolveSpec } from '../schema/kind.js';
import { InvalidSpecError } from '../schema/validate.js';
import { PASSWORD_REVISION_ANNOTATION, databaseEnv, databaseVolume, databaseVolumeMount } from './database.js';
import { APP } from './spec.js';
import type { AppSpec, ResolvedAppPort, ResolvedAppSpec, ResolvedEnvVar, ResolvedProbe } from './spec.generated.js';

/** The props of {@link App}: exactly the `spec` of an App custom resource. */
export type AppProps = AppSpec;

/** The name of the application container: stable, so that patches and `kubectl logs -c` keep working. */
export const APP_CONTAINER_NAME = 'app';

const TMP_VOLUME = 'tmp';

/**
 * The scopes in which an App is rendered for the controller (ManagedApp, render()): only there may it
 * have spec.database, whose account and Secret the controller makes.
 */
const CONTROLLED_SCOPES = new WeakSet<Construct>();
/** The password revision (PASSWORD_REVISION_ANNOTATION) of the App resource rendered in a scope. */
const PASSWORD_REVISIONS = new WeakMap<Construct, string>();

/**
 * Marks a scope whose App is the controller's render of an App resource (see {@link App}), with the
 * password revision the controller set on that resource (its pods roll when it changes). @internal
 */
export function markControlledScope(scope: Construct, passwordRevision?: string): Construct {
  CONTROLLED_SCOPES.add(scope);
  if (passwordRevision !== undefined) PASSWORD_REVISIONS.set(scope, passwordRevision);
  return scope;
}

/**
 * An application: a Deployment, a Service when it has ports, a HorizontalPodAutoscaler when it
 * autoscales, and a PodDisruptionBudget when it runs more than one pod (unless
 * `disruptionBudget.enabled` is false).
 *
 * The construct id is the name of the App and of every object it renders. The props are validated
 * (and defaulted) before anything is created: an invalid spec throws an `InvalidSpecError` that
 * lists every problem, and leaves the construct tree untouched.
 */
export class App extends Construct {
  /** The validated spec, every default applied (deeply frozen). */
  readonly spec: ResolvedAppSpec;
  /** The labels the pods are selected by (what `status.selector` and NetworkPolicies need). */
  readonly selector: Readonly<Record<string, string>>;
  readonly deployment: k8s.KubeDeployment;
  /** Present when the spec has ports. */
  readonly service?: k8s.KubeService;
  /** Present when the spec has `autoscaling`. */
  readonly autoscaler?: k8s.KubeHorizontalPodAutoscalerV2;
  /** Present when more than one pod is guaranteed to run and `disruptionBudget.enabled` is not false. */
  readonly disruptionBudget?: k8s.KubePodDisruptionBudget;

  constructor(scope: Construct, id: string, props: AppProps) {
    // Validate before super(): a spec that cannot be rendered must not leave a half-built node behind.
    const spec = resolveSpec<ResolvedAppSpec>(APP, id, props);
    if (spec.database && !CONTROLLED_SCOPES.has(scope))
      throw new InvalidSpecError(`App "${id}"`, [
        {
          field: 'spec.database',
          value: spec.database,
          expected:
            'no database on a plain App: its account, password Secret and grant are made by the recon8s controller, which does not manage a plain App; use ManagedApp (the App resource) for a database binding',
        },
      ]);
    super(scope, id);
    refuseDuplicateObjects(this);
    this.spec = spec;
    this.selector = Object.freeze(selectorLabels({ name: id, instance: id }));

    const metadata = (): k8s.ObjectMeta => objectMeta(id, spec);
    this.deployment = new k8s.KubeDeployment(this, 'deployment', {
      metadata: metadata(),
      spec: deploymentSpec(id, spec, this.selector, spec.database ? PASSWORD_REVISIONS.get(scope) : undefined),
    });
    if (hasPorts(spec)) {
      this.service = new k8s.KubeService(this, 'service', {
        metadata: metadata(),
        spec: serviceSpec(spec.ports, spec, this.selector),
      });
    }
    if (spec.autoscaling) {
      this.autoscaler = new k8s.KubeHorizontalPodAutoscalerV2(this, 'autoscaler', {
        metadata: metadata(),
        spec: autoscalerSpec(id, spec.autoscaling),
      });
    }
    if (guaranteedPods(spec) > 1 && spec.disruptionBudget.enabled) {
      this.disruptionBudget = new k8s.KubePodDisruptionBudget(this, 'disruption-budget', {
        metadata: metadata(),
        spec: disruptionBudgetSpec(spec.disruptionBudget.maxUnavailable, this.selector),
      });
    }
  }
}

function objectMeta(name: string, spec: ResolvedAppSpec): k8s.ObjectMeta {
  return {
    name,
    labels: objectLabels({ name, instance: name }, spec.labels),
    annotations: objectAnnotations(spec.annotations),
  };
}

function hasPorts(spec: ResolvedAppSpec): spec is ResolvedAppSpec & { readonly ports: readonly ResolvedAppPort[] } {
  return (spec.ports?.length ?? 0) > 0;
}

/** Pods that always run: the fixed replicas, or the autoscaler's floor (replicas is ignored while it scales). */
function guaranteedPods(spec: ResolvedAppSpec): number {
  return spec.autoscaling ? spec.autoscaling.minReplicas : spec.replicas;
}

/** Whether the Deployment may run more than one pod, now or after scaling. */
function mayRunSeveral(spec: ResolvedAppSpec): boolean {
  return spec.autoscaling !== undefined || spec.replicas > 1;
}

// --- Deployment -------------------------------------------------------------------------------

function deploymentSpec(
  name: string,
  spec: ResolvedAppSpec,
  selector: Readonly<Record<string, string>>,
  passwordRevision: string | undefined,
): k8s.DeploymentSpec {
  return {
    // With an autoscaler, replicas is the HPA's field: sending it would make every apply fight the HPA.
    replicas: spec.autoscaling ? undefined : spec.replicas,
    selector: { matchLabels: { ...selector } },
    revisionHistoryLimit: 5,
    // Surge rather than take pods away: a rollout never drops below the desired count, at the cost
    // of briefly running up to 25% more pods (which need room to schedule, or the rollout waits).
    strategy: {
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: k8s.IntOrString.fromString('25%'), maxUnavailable: k8s.IntOrString.fromNumber(0) },
    },
    template: {
      metadata: {
        labels: {
          ...objectLabels({ name, instance: name }, spec.labels),
          // What the bound cluster's NetworkPolicy admits to 3306 (constructs/mysql/network-policy.ts).
          ...(spec.database ? { [BOUND_CLUSTER_LABEL]: spec.database.cluster } : {}),
        },
        // A new password revision is a new template: the Deployment replaces every pod, and the new
        // ones read the rotated password from the Secret.
        annotations: objectAnnotations({
          ...spec.annotations,
          ...(passwordRevision === undefined ? {} : { [PASSWORD_REVISION_ANNOTATION]: passwordRevision }),
        }),
      },
      spec: podSpec(name, spec, selector),
    },
  };
}

function podSpec(name: string, spec: ResolvedAppSpec, selector: Readonly<Record<string, string>>): k8s.PodSpec {
  const sc = spec.securityContext;
  return {
    containers: [container(name, spec)],
    securityContext: podSecurityContext({
      runAsUser: sc.runAsUser,
      runAsGroup: sc.runAsGroup,
      fsGroup: sc.fsGroup,
      runAsNonRoot: sc.runAsNonRoot,
    }),
    // A writable /tmp, so readOnlyRootFilesystem does not break programs that write temporary files.
    volumes: [{ name: TMP_VOLUME, emptyDir: {} }, ...(spec.database ? [databaseVolume(name)] : [])],
    serviceAccountName: spec.serviceAccountName,
    // Without a ServiceAccount of its own, the pod has no business with the API: no token to steal.
    // With one, the ServiceAccount's own automount setting decides.
    automountServiceAccountToken: spec.serviceAccountName === undefined ? false : undefined,
    // Service links put the address of every Service in the namespace into the environment: noise
    // that leaks, slows starts in big namespaces, and can shadow the app's own variables.
    enableServiceLinks: false,
    imagePullSecrets: nonEmpty(spec.imagePullSecrets)?.map((name) => ({ name })),
    nodeSelector: nonEmptyMap(spec.nodeSelector),
    tolerations: nonEmpty(spec.tolerations),
    affinity: affinity(spec, selector),
  };
}

function container(name: string, spec: ResolvedAppSpec): k8s.Container {
  const env = [...(spec.env ?? []).map(envVar), ...(spec.database ? databaseEnv(name, spec.database) : [])];
  return {
    name: APP_CONTAINER_NAME,
    image: spec.image,
    imagePullPolicy: spec.imagePullPolicy,
    command: nonEmpty(spec.command),
    args: nonEmpty(spec.args),
    env: nonEmpty(env),
    ports: hasPorts(spec) ? spec.ports.map(containerPort) : undefined,
    resources: containerResources(spec.resources),
    livenessProbe: spec.livenessProbe && probe(spec.livenessProbe),
    readinessProbe: spec.readinessProbe && probe(spec.readinessProbe),
    securityContext: containerSecurityContext({
      runAsNonRoot: spec.securityContext.runAsNonRoot,
      readOnlyRootFilesystem: spec.securityContext.readOnlyRootFilesystem,
    }),
    volumeMounts: [{ name: TMP_VOLUME, mountPath: '/tmp' }, ...(spec.database ? [databaseVolumeMount()] : [])],
  };
}

function envVar(e: ResolvedEnvVar): k8s.EnvVar {
  const from = e.valueFrom;
  return {
    name: e.name,
    value: e.value,
    valueFrom: from && {
      secretKeyRef: from.secretKeyRef && {
        name: from.secretKeyRef.name,
        key: from.secretKeyRef.key,
        optional: from.secretKeyRef.optional,
      },
      configMapKeyRef: from.configMapKeyRef && {
        name: from.configMapKeyRef.name,
        key: from.configMapKeyRef.key,
        optional: from.configMapKeyRef.optional,
      },
    },
  };
}

function containerPort(p: ResolvedAppPort): k8s.ContainerPort {
  return { name: p.name, containerPort: targetPort(p), protocol: p.protocol };
}

function targetPort(p: ResolvedAppPort): number {
  return p.targetPort ?? p.port;
}

/** Resources, or nothing: `resources: {}` would be an empty map we claim to own. */
function containerResources(r: ResolvedAppSpec['resources']): k8s.ResourceRequirements | undefined {
  const out = resourceRequirements(r);
  return out.requests || out.limits ? out : undefined;
}

function probe(p: ResolvedProbe): k8s.Probe {
  return {
    httpGet: p.httpGet && { path: p.httpGet.path, port: intOrString(p.httpGet.port), scheme: p.httpGet.scheme },
    tcpSocket: p.tcpSocket && { port: intOrString(p.tcpSocket.port) },
    exec: p.exec && { command: [...p.exec.command] },
    initialDelaySeconds: p.initialDelaySeconds,
    periodSeconds: p.periodSeconds,
    timeoutSeconds: p.timeoutSeconds,
    failureThreshold: p.failureThreshold,
  };
}

function intOrString(v: number | string): k8s.IntOrString {
  return typeof v === 'number' ? k8s.IntOrString.fromNumber(v) : k8s.IntOrString.fromString(v);
}

/**
 * The user's affinity replaces ours whole (merging would make ours impossible to remove); an empty
 * one opts out of any. Otherwise replicas are spread over nodes whenever there can be several.
 */
function affinity(spec: ResolvedAppSpec, selector: Readonly<Record<string, string>>): k8s.Affinity | undefined {
  if (spec.affinity !== undefined) return Object.keys(spec.affinity).length > 0 ? spec.affinity : undefined;
  return mayRunSeveral(spec) ? preferredAntiAffinity(selector) : undefined;
}

// --- Service, autoscaler, disruption budget ---------------------------------------------------

function serviceSpec(
  ports: readonly ResolvedAppPort[],
  spec: ResolvedAppSpec,
  selector: Readonly<Record<string, string>>,
): k8s.ServiceSpec {
  return {
    type: spec.serviceType,
    selector: { ...selector },
    ports: ports.map((p) => ({
      name: p.name,
      port: p.port,
      targetPort: k8s.IntOrString.fromNumber(targetPort(p)),
      protocol: p.protocol,
    })),
  };
}

function autoscalerSpec(
  name: string,
  a: NonNullable<ResolvedAppSpec['autoscaling']>,
): k8s.HorizontalPodAutoscalerSpecV2 {
  const utilization = (resource: 'cpu' | 'memory', percent: number): k8s.MetricSpecV2 => ({
    type: 'Resource',
    resource: { name: resource, target: { type: 'Utilization', averageUtilization: percent } },
  });
  return {
    scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
    minReplicas: a.minReplicas,
    maxReplicas: a.maxReplicas,
    metrics: [
      utilization('cpu', a.targetCPUUtilizationPercent),
      ...(a.targetMemoryUtilizationPercent !== undefined
        ? [utilization('memory', a.targetMemoryUtilizationPercent)]
        : []),
    ],
  };
}

function disruptionBudgetSpec(
  maxUnavailable: number | string,
  selector: Readonly<Record<string, string>>,
): k8s.PodDisruptionBudgetSpec {
  return {
    // maxUnavailable, not minAvailable: "one pod at a time" stays right at any scale (an HPA or a
    // `kubectl scale` needs no PDB change), and it never blocks a drain outright the way
    // minAvailable equal to the replica count does.
    maxUnavailable: intOrString(maxUnavailable),
    selector: { matchLabels: { ...selector } },
    // Pods that are not ready protect nothing: let a drain evict them, or a crash-looping App would
    // block node maintenance for good (the Kubernetes docs recommend this for most workloads).
    unhealthyPodEvictionPolicy: 'AlwaysAllow',
  };
}

// --- helpers ----------------------------------------------------------------------------------

/** A mutable copy of a list, or undefined for none: an empty list would be a field we own. */
function nonEmpty<T>(xs: readonly T[] | undefined): T[] | undefined {
  return xs && xs.length > 0 ? [...xs] : undefined;
}

/** A copy of a map, or undefined for none: an empty map would be a field we own. */
function nonEmptyMap(m: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
  return m && Object.keys(m).length > 0 ? { ...m } : undefined;
}
