// Generated from constructs/app/spec.ts by constructs/schema/codegen.ts (npm run codegen). Do not edit.
import type { k8s } from 'cdk8s-plus-28';

/**
 * One application: a Deployment, and a Service when it has ports, with the companions (autoscaler,
 * disruption budget) it asks for.
 */
export interface AppSpec {
  /**
   * The container image, e.g. "nginx:1.27" or a digest reference.
   */
  readonly image: string;
  /**
   * Desired pods. While autoscaling is set the autoscaler decides, and changing this (kubectl scale
   * included) is refused.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * Overrides the image entrypoint.
   * @default - the image entrypoint
   */
  readonly command?: readonly string[];
  /**
   * Arguments to the entrypoint.
   * @default - the image cmd
   */
  readonly args?: readonly string[];
  /**
   * Environment variables of the main container.
   * @default - none
   */
  readonly env?: readonly EnvVar[];
  /**
   * Ports the application listens on. With none, no Service is rendered.
   * @default - none
   */
  readonly ports?: readonly AppPort[];
  /**
   * How the Service is exposed.
   * @default "ClusterIP"
   */
  readonly serviceType?: "ClusterIP" | "NodePort" | "LoadBalancer";
  /**
   * Compute resources of the main container. When set, exactly these requests and limits are used. A
   * CPU limit is not set by default: it throttles without protecting anything.
   * @default {"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"memory":"256Mi"}}
   */
  readonly resources?: ResourceRequirements;
  /**
   * Restart the container when this fails.
   * @default - no liveness probe
   */
  readonly livenessProbe?: Probe;
  /**
   * Take the pod out of the Service while this fails.
   * @default - no readiness probe
   */
  readonly readinessProbe?: Probe;
  /**
   * A HorizontalPodAutoscaler for the Deployment. When set, the Deployment leaves replicas to the
   * autoscaler.
   * @default - none
   */
  readonly autoscaling?: AppAutoscaling;
  /**
   * The PodDisruptionBudget, rendered while more than one pod is guaranteed to run (replicas, or
   * autoscaling.minReplicas, of 2 or more): how many pods a voluntary disruption such as a node
   * drain may take down at once.
   * @default - enabled, one pod at a time
   */
  readonly disruptionBudget?: AppDisruptionBudget;
  /**
   * Labels added to every rendered object and to the pod template (never to selectors). Keys under
   * app.kubernetes.io/ are reserved.
   * @default - none
   */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * Annotations added to every rendered object and to the pod template.
   * @default - none
   */
  readonly annotations?: Readonly<Record<string, string>>;
  /**
   * The ServiceAccount the pods run as: any of the namespace, as for a pod, unless the operator's
   * appServiceAccounts allow-list says otherwise (an App naming another is refused:
   * Degraded/ReferenceNotAllowed).
   * @default - the namespace default, with no API token mounted
   */
  readonly serviceAccountName?: string;
  /**
   * When the kubelet pulls the image.
   * @default "IfNotPresent"
   */
  readonly imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  /**
   * Secrets holding registry credentials.
   * @default - none
   */
  readonly imagePullSecrets?: readonly string[];
  /**
   * Who the container runs as. The default passes the Pod Security "restricted" profile; an image
   * that must run as root says so explicitly with runAsNonRoot: false and runAsUser: 0.
   * @default - uid and gid 65532, non-root, no privilege escalation, all capabilities dropped, seccomp RuntimeDefault
   */
  readonly securityContext?: AppSecurityContext;
  /**
   * A database of a MySQLCluster for this App, with an account of its own. The controller creates
   * the database when it is missing (and never drops it), creates the App's account with a generated
   * password, grants it the access asked on that database and nothing else, and writes the Secret
   * `<app>-db` (owned by the App) in the servicebinding.io shape. The container gets DB_HOST (the
   * primary Service), DB_READ_HOST (the replicas Service), DB_PORT, DB_NAME, DB_USER and DB_PASSWORD
   * (from that Secret), and the Secret is mounted at $SERVICE_BINDING_ROOT/database. Deleting the
   * App, or this field, drops the account, never the database.
   * @default - no database account
   */
  readonly database?: AppDatabase;
  /**
   * The NetworkPolicy <name> (networking.k8s.io/v1) that admits to the App's pods connections on its
   * declared ports (spec.ports, the container side: targetPort) and nothing else: a port the
   * container listens on but the spec does not declare is closed, and an App without ports takes no
   * connection. From any source unless `from` narrows it; egress unrestricted unless
   * `restrictEgress`. Where the network plugin does not enforce NetworkPolicies the policy is inert
   * (docs/security.md). NetworkPolicies add up: a policy of your own that selects the App's pods can
   * admit more (another port, another destination), never less.
   * @default - on: the declared ports from any source, egress unrestricted
   */
  readonly networkPolicy?: AppNetworkPolicy;
  /**
   * Node labels a pod requires (nodeSelector).
   * @default - none
   */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /**
   * Tolerations of the pods, as in a PodSpec (validated by the API server when the workload is
   * applied).
   * @default - none
   */
  readonly tolerations?: readonly k8s.Toleration[];
  /**
   * Affinity of the pods, as in a PodSpec (validated by the API server when the workload is
   * applied).
   * @default - a preferred anti-affinity that spreads replicas across nodes
   */
  readonly affinity?: k8s.Affinity;
  /**
   * Pause reconciliation: the controller leaves this resource's children exactly as they are (no
   * apply, no prune, no Secret writes) and reports Progressing=False reason Paused, until this is
   * cleared. cdk8s synth ignores it.
   * @default false
   */
  readonly paused?: boolean;
}

/** {@link AppSpec} with every default applied. */
export interface ResolvedAppSpec {
  readonly image: string;
  readonly replicas: number;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly env?: readonly ResolvedEnvVar[];
  readonly ports?: readonly ResolvedAppPort[];
  readonly serviceType: "ClusterIP" | "NodePort" | "LoadBalancer";
  readonly resources: ResolvedResourceRequirements;
  readonly livenessProbe?: ResolvedProbe;
  readonly readinessProbe?: ResolvedProbe;
  readonly autoscaling?: ResolvedAppAutoscaling;
  readonly disruptionBudget: ResolvedAppDisruptionBudget;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly serviceAccountName?: string;
  readonly imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  readonly imagePullSecrets?: readonly string[];
  readonly securityContext: ResolvedAppSecurityContext;
  readonly database?: ResolvedAppDatabase;
  readonly networkPolicy: ResolvedAppNetworkPolicy;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly k8s.Toleration[];
  readonly affinity?: k8s.Affinity;
  readonly paused: boolean;
}

/**
 * An environment variable: a literal value, or a reference to a Secret or ConfigMap key.
 */
export interface EnvVar {
  /**
   * Name of the variable.
   */
  readonly name: string;
  /**
   * A literal value. Never put a password here: use valueFrom.secretKeyRef.
   * @default - none
   */
  readonly value?: string;
  /**
   * Where the value comes from.
   * @default - none
   */
  readonly valueFrom?: EnvVarSource;
}

/** {@link EnvVar} with every default applied. */
export interface ResolvedEnvVar {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: ResolvedEnvVarSource;
}

/**
 * Where the value comes from.
 */
export interface EnvVarSource {
  /**
   * Selects a key of a Secret.
   * @default - none
   */
  readonly secretKeyRef?: SecretKeySelector;
  /**
   * Selects a key of a ConfigMap.
   * @default - none
   */
  readonly configMapKeyRef?: ConfigMapKeySelector;
}

/** {@link EnvVarSource} with every default applied. */
export interface ResolvedEnvVarSource {
  readonly secretKeyRef?: ResolvedSecretKeySelector;
  readonly configMapKeyRef?: ResolvedConfigMapKeySelector;
}

/**
 * Selects a key of a Secret.
 */
export interface SecretKeySelector {
  /**
   * Name of the Secret in the same namespace.
   */
  readonly name: string;
  /**
   * The key within the Secret.
   */
  readonly key: string;
  /**
   * Whether the container may start when the Secret or key is missing.
   * @default - false
   */
  readonly optional?: boolean;
}

/** {@link SecretKeySelector} with every default applied. */
export interface ResolvedSecretKeySelector {
  readonly name: string;
  readonly key: string;
  readonly optional?: boolean;
}

/**
 * Selects a key of a ConfigMap.
 */
export interface ConfigMapKeySelector {
  /**
   * Name of the ConfigMap in the same namespace.
   */
  readonly name: string;
  /**
   * The key within the ConfigMap.
   */
  readonly key: string;
  /**
   * Whether the container may start when the ConfigMap or key is missing.
   * @default - false
   */
  readonly optional?: boolean;
}

/** {@link ConfigMapKeySelector} with every default applied. */
export interface ResolvedConfigMapKeySelector {
  readonly name: string;
  readonly key: string;
  readonly optional?: boolean;
}

/**
 * A port the application listens on, exposed by the Service.
 */
export interface AppPort {
  /**
   * Port name (unique; what probes and other objects refer to). Required when there are several
   * ports, as Kubernetes requires of a Service.
   * @default - no name (allowed for a single port)
   */
  readonly name?: string;
  /**
   * The port the Service exposes.
   */
  readonly port: number;
  /**
   * The port the container listens on.
   * @default - the same as port
   */
  readonly targetPort?: number;
  /**
   * Transport protocol.
   * @default "TCP"
   */
  readonly protocol?: "TCP" | "UDP" | "SCTP";
}

/** {@link AppPort} with every default applied. */
export interface ResolvedAppPort {
  readonly name?: string;
  readonly port: number;
  readonly targetPort?: number;
  readonly protocol: "TCP" | "UDP" | "SCTP";
}

/**
 * Compute resources of the main container. When set, exactly these requests and limits are used. A
 * CPU limit is not set by default: it throttles without protecting anything.
 */
export interface ResourceRequirements {
  /**
   * What the scheduler reserves for the container.
   * @default - none
   */
  readonly requests?: ResourceList;
  /**
   * The most the container may use.
   * @default - none
   */
  readonly limits?: ResourceList;
}

/** {@link ResourceRequirements} with every default applied. */
export interface ResolvedResourceRequirements {
  readonly requests?: ResolvedResourceList;
  readonly limits?: ResolvedResourceList;
}

/**
 * What the scheduler reserves for the container.
 */
export interface ResourceList {
  /**
   * CPU, in cores, e.g. "250m" or 1.
   * @default - none
   */
  readonly cpu?: string | number;
  /**
   * Memory, with a byte unit, e.g. "256Mi".
   * @default - none
   */
  readonly memory?: string | number;
}

/** {@link ResourceList} with every default applied. */
export interface ResolvedResourceList {
  readonly cpu?: string | number;
  readonly memory?: string | number;
}

/**
 * Restart the container when this fails.
 */
export interface Probe {
  /**
   * An HTTP GET that must answer 200-399.
   * @default - none
   */
  readonly httpGet?: HttpGetAction;
  /**
   * A TCP connection that must open.
   * @default - none
   */
  readonly tcpSocket?: TcpSocketAction;
  /**
   * A command that must exit 0.
   * @default - none
   */
  readonly exec?: ExecAction;
  /**
   * Seconds after start before the first check.
   * @default 0
   */
  readonly initialDelaySeconds?: number;
  /**
   * Seconds between checks.
   * @default 10
   */
  readonly periodSeconds?: number;
  /**
   * Seconds a check may take.
   * @default 1
   */
  readonly timeoutSeconds?: number;
  /**
   * Failed checks in a row that count as a failure.
   * @default 3
   */
  readonly failureThreshold?: number;
}

/** {@link Probe} with every default applied. */
export interface ResolvedProbe {
  readonly httpGet?: ResolvedHttpGetAction;
  readonly tcpSocket?: ResolvedTcpSocketAction;
  readonly exec?: ResolvedExecAction;
  readonly initialDelaySeconds: number;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly failureThreshold: number;
}

/**
 * An HTTP GET that must answer 200-399.
 */
export interface HttpGetAction {
  /**
   * Path to request.
   * @default "/"
   */
  readonly path?: string;
  /**
   * Container port number or name.
   */
  readonly port: number | string;
  /**
   * HTTP or HTTPS.
   * @default "HTTP"
   */
  readonly scheme?: "HTTP" | "HTTPS";
}

/** {@link HttpGetAction} with every default applied. */
export interface ResolvedHttpGetAction {
  readonly path: string;
  readonly port: number | string;
  readonly scheme: "HTTP" | "HTTPS";
}

/**
 * A TCP connection that must open.
 */
export interface TcpSocketAction {
  /**
   * Container port number or name.
   */
  readonly port: number | string;
}

/** {@link TcpSocketAction} with every default applied. */
export interface ResolvedTcpSocketAction {
  readonly port: number | string;
}

/**
 * A command that must exit 0.
 */
export interface ExecAction {
  /**
   * The command and its arguments (no shell).
   */
  readonly command: readonly string[];
}

/** {@link ExecAction} with every default applied. */
export interface ResolvedExecAction {
  readonly command: readonly string[];
}

/**
 * A HorizontalPodAutoscaler for the Deployment. When set, the Deployment leaves replicas to the
 * autoscaler.
 */
export interface AppAutoscaling {
  /**
   * The fewest replicas.
   * @default 1
   */
  readonly minReplicas?: number;
  /**
   * The most replicas.
   */
  readonly maxReplicas: number;
  /**
   * Average CPU use, in percent of requests, to aim for.
   * @default 80
   */
  readonly targetCPUUtilizationPercent?: number;
  /**
   * Average memory use, in percent of requests, to aim for.
   * @default - memory is not a target
   */
  readonly targetMemoryUtilizationPercent?: number;
}

/** {@link AppAutoscaling} with every default applied. */
export interface ResolvedAppAutoscaling {
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly targetCPUUtilizationPercent: number;
  readonly targetMemoryUtilizationPercent?: number;
}

/**
 * The PodDisruptionBudget, rendered while more than one pod is guaranteed to run (replicas, or
 * autoscaling.minReplicas, of 2 or more): how many pods a voluntary disruption such as a node
 * drain may take down at once.
 */
export interface AppDisruptionBudget {
  /**
   * Render the PodDisruptionBudget. false leaves voluntary disruptions unlimited (a development
   * namespace, or a budget managed elsewhere).
   * @default true
   */
  readonly enabled?: boolean;
  /**
   * Pods that may be unavailable at once: a number of at least 1, or a percentage of the desired
   * pods from "1%" to "100%" (rounded up, so never 0).
   * @default 1
   */
  readonly maxUnavailable?: number | string;
}

/** {@link AppDisruptionBudget} with every default applied. */
export interface ResolvedAppDisruptionBudget {
  readonly enabled: boolean;
  readonly maxUnavailable: number | string;
}

/**
 * Who the container runs as. The default passes the Pod Security "restricted" profile; an image
 * that must run as root says so explicitly with runAsNonRoot: false and runAsUser: 0.
 */
export interface AppSecurityContext {
  /**
   * The uid the container runs as.
   * @default 65532
   */
  readonly runAsUser?: number;
  /**
   * The gid the container runs as.
   * @default 65532
   */
  readonly runAsGroup?: number;
  /**
   * The group that owns mounted volumes.
   * @default - not set
   */
  readonly fsGroup?: number;
  /**
   * Refuse to start a container that would run as uid 0.
   * @default true
   */
  readonly runAsNonRoot?: boolean;
  /**
   * Mount the image read-only (a writable /tmp is always mounted).
   * @default false
   */
  readonly readOnlyRootFilesystem?: boolean;
}

/** {@link AppSecurityContext} with every default applied. */
export interface ResolvedAppSecurityContext {
  readonly runAsUser: number;
  readonly runAsGroup: number;
  readonly fsGroup?: number;
  readonly runAsNonRoot: boolean;
  readonly readOnlyRootFilesystem: boolean;
}

/**
 * A database of a MySQLCluster for this App, with an account of its own. The controller creates
 * the database when it is missing (and never drops it), creates the App's account with a generated
 * password, grants it the access asked on that database and nothing else, and writes the Secret
 * `<app>-db` (owned by the App) in the servicebinding.io shape. The container gets DB_HOST (the
 * primary Service), DB_READ_HOST (the replicas Service), DB_PORT, DB_NAME, DB_USER and DB_PASSWORD
 * (from that Secret), and the Secret is mounted at $SERVICE_BINDING_ROOT/database. Deleting the
 * App, or this field, drops the account, never the database.
 */
export interface AppDatabase {
  /**
   * The MySQLCluster, in the App's namespace.
   */
  readonly cluster: string;
  /**
   * The database (schema). Created when missing; never dropped. Not one of MySQL's own (mysql, sys,
   * information_schema, performance_schema).
   */
  readonly name: string;
  /**
   * readWrite: read and write data and manage the tables of the database (no grants, no other
   * database). readOnly: SELECT and SHOW VIEW.
   * @default "readWrite"
   */
  readonly access?: "readWrite" | "readOnly";
}

/** {@link AppDatabase} with every default applied. */
export interface ResolvedAppDatabase {
  readonly cluster: string;
  readonly name: string;
  readonly access: "readWrite" | "readOnly";
}

/**
 * The NetworkPolicy <name> (networking.k8s.io/v1) that admits to the App's pods connections on its
 * declared ports (spec.ports, the container side: targetPort) and nothing else: a port the
 * container listens on but the spec does not declare is closed, and an App without ports takes no
 * connection. From any source unless `from` narrows it; egress unrestricted unless
 * `restrictEgress`. Where the network plugin does not enforce NetworkPolicies the policy is inert
 * (docs/security.md). NetworkPolicies add up: a policy of your own that selects the App's pods can
 * admit more (another port, another destination), never less.
 */
export interface AppNetworkPolicy {
  /**
   * Render the NetworkPolicy. Turn it off only to manage the App’s traffic with policies of your
   * own: without it, any pod that can reach the App’s pods may try every port they listen on.
   * @default true
   */
  readonly enabled?: boolean;
  /**
   * The only sources admitted to the declared ports (any of them). The kubelet's probes come from
   * the node, which NetworkPolicies always admit.
   * @default - any source
   */
  readonly from?: readonly AppNetworkPolicyPeer[];
  /**
   * Let the App's pods open connections only to DNS (port 53, UDP and TCP, anywhere) and, with
   * spec.database, to its MySQLCluster's members on 3306. Off by default: what an application must
   * reach (APIs, object stores, other Services) is its own, and a default that guessed would break
   * it; add a policy of your own to admit more.
   * @default false
   */
  readonly restrictEgress?: boolean;
}

/** {@link AppNetworkPolicy} with every default applied. */
export interface ResolvedAppNetworkPolicy {
  readonly enabled: boolean;
  readonly from?: readonly ResolvedAppNetworkPolicyPeer[];
  readonly restrictEgress: boolean;
}

/**
 * A source admitted to the App's ports, as a NetworkPolicy peer: pods (podSelector, in the App's
 * namespace unless namespaceSelector is set too), the pods of namespaces (namespaceSelector), or
 * addresses (ipBlock, alone).
 */
export interface AppNetworkPolicyPeer {
  /**
   * Selects pods by their labels (all of them must match).
   * @default - none
   */
  readonly podSelector?: AppNetworkPolicyPodSelector;
  /**
   * Selects namespaces by their labels (all of them must match).
   * @default - none
   */
  readonly namespaceSelector?: AppNetworkPolicyNamespaceSelector;
  /**
   * Addresses, e.g. a load balancer’s or the nodes’ network (what a NodePort or LoadBalancer Service
   * forwards from, unless it keeps the client’s address).
   * @default - none
   */
  readonly ipBlock?: AppNetworkPolicyIpBlock;
}

/** {@link AppNetworkPolicyPeer} with every default applied. */
export interface ResolvedAppNetworkPolicyPeer {
  readonly podSelector?: ResolvedAppNetworkPolicyPodSelector;
  readonly namespaceSelector?: ResolvedAppNetworkPolicyNamespaceSelector;
  readonly ipBlock?: ResolvedAppNetworkPolicyIpBlock;
}

/**
 * Selects pods by their labels (all of them must match).
 */
export interface AppNetworkPolicyPodSelector {
  /**
   * The labels the pods must carry.
   */
  readonly matchLabels: Readonly<Record<string, string>>;
}

/** {@link AppNetworkPolicyPodSelector} with every default applied. */
export interface ResolvedAppNetworkPolicyPodSelector {
  readonly matchLabels: Readonly<Record<string, string>>;
}

/**
 * Selects namespaces by their labels (all of them must match).
 */
export interface AppNetworkPolicyNamespaceSelector {
  /**
   * The labels the namespaces must carry.
   */
  readonly matchLabels: Readonly<Record<string, string>>;
}

/** {@link AppNetworkPolicyNamespaceSelector} with every default applied. */
export interface ResolvedAppNetworkPolicyNamespaceSelector {
  readonly matchLabels: Readonly<Record<string, string>>;
}

/**
 * Addresses, e.g. a load balancer’s or the nodes’ network (what a NodePort or LoadBalancer Service
 * forwards from, unless it keeps the client’s address).
 */
export interface AppNetworkPolicyIpBlock {
  /**
   * The network.
   */
  readonly cidr: string;
  /**
   * Networks inside cidr that are not admitted.
   * @default - none
   */
  readonly except?: readonly string[];
}

/** {@link AppNetworkPolicyIpBlock} with every default applied. */
export interface ResolvedAppNetworkPolicyIpBlock {
  readonly cidr: string;
  readonly except?: readonly string[];
}

/**
 * What the controller last observed.
 */
export interface AppStatus {
  /**
   * The metadata.generation this status describes.
   * @default - none
   */
  readonly observedGeneration?: number;
  /**
   * Conditions Ready, Progressing and Degraded.
   * @default - none
   */
  readonly conditions?: readonly Condition[];
  /**
   * Pods of the Deployment.
   * @default - none
   */
  readonly replicas?: number;
  /**
   * Pods the Deployment is asked for: spec.replicas, or what the autoscaler set.
   * @default - none
   */
  readonly desiredReplicas?: number;
  /**
   * Pods of the current spec that are available (the old pods of a rollout are not counted).
   * @default - none
   */
  readonly readyReplicas?: number;
  /**
   * The label selector of the pods (for the scale subresource).
   * @default - none
   */
  readonly selector?: string;
  /**
   * Where clients connect: the Service DNS name and first port.
   * @default - none
   */
  readonly endpoint?: string;
  /**
   * The Secret holding the database binding (servicebinding.io: a binding-aware framework reads it
   * from here).
   * @default - none
   */
  readonly binding?: AppBindingStatus;
  /**
   * The rotation of the database password (`recon8s rotate-credentials app`, the
   * recon8s.dev/rotate-credentials annotation). Never holds a password.
   * @default - none
   */
  readonly credentialRotation?: AppCredentialRotationStatus;
}

/** {@link AppStatus} with every default applied. */
export interface ResolvedAppStatus {
  readonly observedGeneration?: number;
  readonly conditions?: readonly ResolvedCondition[];
  readonly replicas?: number;
  readonly desiredReplicas?: number;
  readonly readyReplicas?: number;
  readonly selector?: string;
  readonly endpoint?: string;
  readonly binding?: ResolvedAppBindingStatus;
  readonly credentialRotation?: ResolvedAppCredentialRotationStatus;
}

/**
 * One aspect of the current state (metav1.Condition).
 */
export interface Condition {
  /**
   * Ready, Progressing or Degraded.
   */
  readonly type: string;
  /**
   * True, False or Unknown.
   */
  readonly status: "True" | "False" | "Unknown";
  /**
   * The metadata.generation this condition was set from.
   * @default - none
   */
  readonly observedGeneration?: number;
  /**
   * When status last changed (RFC 3339).
   */
  readonly lastTransitionTime: string;
  /**
   * A CamelCase reason for the last transition.
   */
  readonly reason: string;
  /**
   * A human-readable explanation.
   */
  readonly message: string;
}

/** {@link Condition} with every default applied. */
export interface ResolvedCondition {
  readonly type: string;
  readonly status: "True" | "False" | "Unknown";
  readonly observedGeneration?: number;
  readonly lastTransitionTime: string;
  readonly reason: string;
  readonly message: string;
}

/**
 * The Secret holding the database binding (servicebinding.io: a binding-aware framework reads it
 * from here).
 */
export interface AppBindingStatus {
  /**
   * The Secret, in the namespace of the App.
   */
  readonly name: string;
}

/** {@link AppBindingStatus} with every default applied. */
export interface ResolvedAppBindingStatus {
  readonly name: string;
}

/**
 * The rotation of the database password (`recon8s rotate-credentials app`, the
 * recon8s.dev/rotate-credentials annotation). Never holds a password.
 */
export interface AppCredentialRotationStatus {
  /**
   * The token of the rotation asked for.
   * @default - none
   */
  readonly requested?: string;
  /**
   * The token of the last rotation completed (the old password refused).
   * @default - none
   */
  readonly completed?: string;
  /**
   * The phase of the rotation under way: Staging, Retaining, Switching, RollingPods, Discarding,
   * Completing, Repairing or WaitingForAccount; absent when none is.
   * @default - none
   */
  readonly phase?: string;
  /**
   * What is being done, or waited for.
   * @default - none
   */
  readonly message?: string;
  /**
   * The password revision every pod of the App runs (all of them, terminating ones too), when they
   * all run the one asked for.
   * @default - none
   */
  readonly rolledRevision?: string;
}

/** {@link AppCredentialRotationStatus} with every default applied. */
export interface ResolvedAppCredentialRotationStatus {
  readonly requested?: string;
  readonly completed?: string;
  readonly phase?: string;
  readonly message?: string;
  readonly rolledRevision?: string;
}
