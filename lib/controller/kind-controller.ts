// What a kind adds to the generic reconcile (reconciler.ts): the controller is kind-agnostic, and each
// kind's differences live in its own folder (app/, mysql-cluster/) behind this one interface, found
// through the registry in kinds.ts. Adding a kind: its construct and KindDefinition in constructs/, a
// folder here implementing KindController, one line in kinds.ts.
//
// A contract module: types only, and it imports no implementation of the controller (events.ts,
// status.ts and the kinds import it, never the other way round).
import type {
  KubernetesObject as LiveObject,
  V1ObjectMeta,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Secret,
} from '@kubernetes/client-node';
import type { Condition, KindDefinition, KubernetesObject, OperatorPods } from '../../constructs/index.js';
import type { KubeClient } from '../kube/index.js';
import type { ControllerMetrics } from '../observability/controller-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { ConditionInput } from '../reconcile/conditions.js';

/** A custom resource as the controller reads it. */
export interface CustomResource extends LiveObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: V1ObjectMeta & { readonly name: string };
  readonly spec?: Record<string, unknown>;
  readonly status?: { readonly conditions?: readonly Condition[]; readonly [key: string]: unknown };
}

export type LiveLookup = (apiVersion: string, kind: string, name: string) => LiveObject | undefined;

/** The figures a status reports, and the conditions its children imply. */
export interface ObservedState {
  readonly fields: Record<string, unknown>;
  readonly conditions: ConditionInput[];
  /** The pods of the resource's own children, whose problems the status names (lib/reconcile/pod-problems.ts). */
  readonly pods?: readonly V1Pod[];
}

export type EventType = 'Normal' | 'Warning';

/** Something the user must create or fix outside the spec: a Degraded reason and a message (and an Event). */
export interface Problem {
  readonly reason: string;
  readonly message: string;
}

/**
 * What a kind found before its children are applied. `Facts`: what its prepare() learnt for its own
 * observe() and manager (the MySQLCluster's Secrets and CA, an App's binding), typed by the kind.
 */
export interface Preparation<Facts = unknown> {
  /** Reported as Degraded and Events; the resource is looked at again later (never hot). */
  readonly problems: readonly Problem[];
  /** Children not to apply (nor prune) for now: e.g. pods that would read a Secret that is not usable yet. */
  readonly holdBack?: (child: KubernetesObject) => boolean;
  /** A Normal Event to record (e.g. a Secret created). */
  readonly events?: readonly { readonly reason: string; readonly message: string }[];
  /** Handed back to observe() and to the kind's manager. */
  readonly facts?: Facts;
}

/** What a kind's prepare() is given: the resource, and the caches and facts it may read. */
export interface PrepareContext {
  readonly client: KubeClient;
  readonly cr: CustomResource;
  readonly install: InstallFacts;
  /** Secrets, from their watches; absent: read live. */
  readonly secrets?: SecretLookup;
  /** The other recon8s resources, from the cache (absent where there is none). */
  readonly resources?: ResourceLookup;
  /** cert-manager Certificates, from their watches once they exist; absent: read live. */
  readonly certificates?: CertificateLookup;
  /** PersistentVolumeClaims the resource names, from watches by name; absent: read live. */
  readonly claims?: ClaimLookup;
}

/** What to do after the API server refused (422) to apply a child as rendered. */
export type RefusalRecovery =
  /** Nothing this kind knows: the refusal is reported as is. */
  | { readonly outcome: 'none' }
  /** The kind is making it possible (an Event says so); the child comes back through its informer. */
  | { readonly outcome: 'recovering'; readonly reason: string; readonly message: string }
  /** Apply this instead (all but the refused part), and report the refused part, retried with backoff. */
  | {
      readonly outcome: 'partial';
      readonly apply: KubernetesObject;
      readonly reason: string;
      readonly message: string;
    };

/**
 * A kind's pods, watched (read-only) for its status and its manager: a change of one queues its resource
 * (the pod's `app.kubernetes.io/instance` label; observe() checks the pod is really one of its children's).
 */
export interface PodWatch {
  /** The label selector of the pods to watch. */
  readonly selector: string;
  /** Reports in the pods' termination messages, turned into Events on their resource. */
  readonly reports?: (pod: V1Pod) => readonly PodReport[];
}

export interface PodReport {
  readonly namespace: string;
  /** The resource's name (of this kind). */
  readonly owner: string;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
  /** The same report seen again is the same key: one Event, whoever records it. */
  readonly key: string;
}

/**
 * Reads a Secret a resource uses (`owner`: that resource), from a watch of that Secret when there is one,
 * so that the resource is looked at again when it changes (lib/controller/mysql-cluster/secret-cache.ts).
 */
export type SecretReader = (
  owner: { readonly uid: string; readonly kind: string; readonly name: string },
  namespace: string,
  name: string,
) => Promise<V1Secret | undefined>;

/** A Secret of the resource being reconciled, in its namespace or another. */
export type SecretLookup = (namespace: string, name: string) => Promise<V1Secret | undefined>;

/**
 * A cert-manager Certificate of the resource being reconciled (spec.tls.issuerRef), from a watch of it
 * once it exists (a type that may not be served: it throws as a live read does, e.g. 404).
 */
export type CertificateLookup = (namespace: string, name: string) => Promise<LiveObject | undefined>;

/** A PersistentVolumeClaim the resource names (spec.backup.persistentVolumeClaimName), from a watch of it by name. */
export type ClaimLookup = (namespace: string, name: string) => Promise<V1PersistentVolumeClaim | undefined>;

/** Reads a claim a resource names (`owner`: that resource), as SecretReader reads Secrets. */
export type ClaimReader = (
  owner: { readonly uid: string; readonly kind: string; readonly name: string },
  namespace: string,
  name: string,
) => Promise<V1PersistentVolumeClaim | undefined>;

/** Reads a resource's Certificate (`owner`: that resource), as SecretReader reads Secrets. */
export type CertificateReader = (
  owner: { readonly uid: string; readonly kind: string; readonly name: string },
  namespace: string,
  name: string,
) => Promise<LiveObject | undefined>;

/**
 * The recon8s resources in the controller's cache (its informers): what one kind reads of another (an
 * App's binding reads its MySQLCluster; the cluster lists the Apps bound to it).
 */
export interface ResourceLookup {
  get(kind: string, namespace: string, name: string): CustomResource | undefined;
  /** Every resource of a kind in a namespace; undefined until the cache has synced (never judge from a partial list). */
  list(kind: string, namespace: string): readonly CustomResource[] | undefined;
}

/** What a kind's manager (a loop beside the render reconcile) sees each time its resource is reconciled. */
export interface ManageContext<Facts = unknown> {
  readonly client: KubeClient;
  readonly cr: CustomResource;
  readonly live: LiveLookup;
  /** The resource's pods (as the kind's pod selector finds them), from the cache. */
  readonly pods: readonly V1Pod[];
  readonly prepared: Preparation<Facts>;
  readonly log: Logger;
  readonly metrics?: ControllerMetrics;
  /** Secrets, from their watches; absent: read live. */
  readonly secrets?: SecretLookup;
  /** The other recon8s resources, from the cache (absent where there is none: then nothing relies on them). */
  readonly resources?: ResourceLookup;
  /**
   * Aborted when this process stops leading (or stops): the manager must not take another step, nor
   * write, once it is (another leader may be acting already).
   */
  readonly signal?: AbortSignal;
  /**
   * Queues this resource to be reconciled (and so managed) again at once: for what the manager learns
   * between reconciles (a session it keeps open to a member ended). Absent: nothing to call.
   */
  readonly wake?: () => void;
}

/** An Event a manager asks for. */
export interface ManagedEvent {
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
  /**
   * Something that holds until it changes (a member's refused certificate): one Event per key and
   * resource, however many looks (and controllers, after a restart) see it while that Event exists
   * (the API server keeps Events an hour by default). Without it, the same reason and message are
   * recorded again after ten minutes (events.ts).
   */
  readonly once?: string;
}

/** What the manager reports: status fields beside the observed ones, problems, Events, when to look again. */
export interface Management {
  readonly fields: Record<string, unknown>;
  readonly problems: readonly Problem[];
  readonly events: readonly ManagedEvent[];
  /** Look again after this long even if nothing changes (failure detection polls). */
  readonly requeueAfterMs?: number;
  /**
   * Failures the pods reported in their own words (a restore or a backup that failed): they say why a
   * container exits, so they come before what the kubelet says about it (InitContainerFailed).
   */
  readonly reports?: readonly Problem[];
  /** Ready=False with this reason although the pods run (MySQL: writes wait for a replica's acknowledgement). */
  readonly unavailable?: { readonly reason: string; readonly message: string };
}

/**
 * The part of a kind that manages what runs rather than what is rendered (for MySQL: who is the
 * primary). Stateful per controller process (e.g. how long a primary has been unreachable), so one is
 * created per Reconciler; `forget` drops what it holds of a resource that is gone.
 */
export interface Manager<Facts = unknown> {
  manage(ctx: ManageContext<Facts>): Promise<Management>;
  /**
   * A child as it is to be applied now, when what runs decides part of it (a MySQLCluster's StatefulSet
   * keeps the members a scale-down has not yet made safe to remove); `live`: what exists, which this
   * resource controls (an object anyone else controls is never applied, so never amended). Absent, or
   * the same object: as rendered.
   */
  amend?(cr: CustomResource, child: KubernetesObject, live: LiveObject | undefined): KubernetesObject;
  forget(uid: string): void;
  /** Ends what it keeps open between looks (sessions to members): at the end of a term of leadership, and at shutdown. */
  close?(): Promise<void>;
}

/** What the install lets an App name; a kind absent (or `["*"]`): anything of its namespace (app/reference-policy.ts). */
export interface AppReferencePolicy {
  readonly serviceAccounts?: readonly string[];
  readonly secrets?: readonly string[];
}

/** What the install tells the controller about itself (its flags). */
export interface InstallFacts {
  /** The ClusterRole that grants Secrets, which a CredentialsForbidden condition asks to bind. @default "recon8s-credentials" */
  readonly credentialsClusterRole?: string;
  /** The ServiceAccounts and Secrets an App may name (--app-service-accounts, --app-secrets). @default anything of its namespace */
  readonly appReferences?: AppReferencePolicy;
  /**
   * The controller's own pods, which a MySQLCluster's NetworkPolicy admits to its members
   * (--operator-namespace, default $POD_NAMESPACE; --operator-pod-labels). @default every pod of recon8s-system
   */
  readonly operatorPods?: OperatorPods;
}

/** `Facts`: what the kind's prepare() hands to its observe() and manager (Preparation). */
export interface KindController<Facts = unknown> {
  readonly definition: KindDefinition;
  /**
   * What the install does not let this resource have, judged on its render before anything is
   * applied: each refusal becomes Degraded and a Warning Event, nothing of the resource is applied or
   * pruned, and it is looked at again when its spec changes. Absent, or none: go on.
   */
  admit?(cr: CustomResource, rendered: readonly KubernetesObject[], install: InstallFacts): readonly Problem[];
  /** Before the children are applied (credentials, volumes the spec names). Absent: nothing to prepare. */
  prepare?(ctx: PrepareContext): Promise<Preparation<Facts>>;
  /**
   * A resource of another kind this one refers to (an App to the MySQLCluster its database is on): a
   * change of either queues the other.
   */
  readonly refersTo?: { readonly kind: string; readonly name: (cr: CustomResource) => string | undefined };
  /** The API server refused this child as rendered (422); `live` is what exists. */
  recoverRefusedApply?(client: KubeClient, child: KubernetesObject, live: LiveObject): Promise<RefusalRecovery>;
  /** Status fields and the conditions the live children imply; `pods`: the kind's pods in the namespace. */
  observe(
    cr: CustomResource,
    rendered: readonly KubernetesObject[],
    live: LiveLookup,
    prepared: Preparation<Facts>,
    pods: readonly V1Pod[],
  ): ObservedState;
  readonly pods?: PodWatch;
  /** A loop beside the render reconcile, run after the children converged. */
  createManager?(): Manager<Facts>;
}
