// An App ⇒ pods: whoever may create an App may make pods run as any ServiceAccount and read any Secret
// of its namespace, as whoever may create a pod may. The install can narrow that to allow-lists
// (constructs/app/reference-allow-list.ts has their grammar): an App whose pods would name anything
// else is refused before anything of it is applied — nothing is created, changed or pruned for it —
// with Degraded/ReferenceNotAllowed naming the field and the value, and a Warning Event. It is looked
// at again when its spec changes (a terminal error: no retry, so no loop of any speed).
//
// Judged on what render() produced, not on the spec: the kubelet acts on the pod template, so every
// reference in it is checked, whichever field put it there (the ServiceAccount, image pull Secrets,
// env secretKeyRef, envFrom, Secret and projected volumes, of every container). The only exception is
// the App's own binding Secret (`<app>-db`, written by the controller for spec.database).
//
// Why allow-lists and not a label on the Secret: RBAC has no verb that reads a Secret's labels without
// its data, so checking a label would need the operator to read every Secret of every App namespace,
// handing a stolen operator token more than the restriction takes from App authors.
import type { KubernetesObject } from '../../../constructs/index.js';
import { allowListAllows, allowsAny, databaseBindingSecretName } from '../../../constructs/index.js';
import type { AppReferencePolicy, CustomResource } from '../kind-controller.js';

/** A ServiceAccount or Secret a rendered pod template names, and the App field it came from. */
export interface PodReference {
  readonly kind: 'ServiceAccount' | 'Secret';
  readonly name: string;
  /** In the App's terms where it has them (`spec.env[TOKEN].valueFrom.secretKeyRef.name`). */
  readonly field: string;
}

interface EnvVar {
  readonly name: string;
  readonly valueFrom?: { readonly secretKeyRef?: { readonly name?: string } };
}
interface Container {
  readonly name: string;
  readonly env?: readonly EnvVar[];
  readonly envFrom?: readonly { readonly secretRef?: { readonly name?: string } }[];
}
interface Volume {
  readonly name: string;
  readonly secret?: { readonly secretName?: string };
  readonly projected?: { readonly sources?: readonly { readonly secret?: { readonly name?: string } }[] };
}
interface PodSpec {
  readonly serviceAccountName?: string;
  readonly serviceAccount?: string;
  readonly imagePullSecrets?: readonly { readonly name?: string }[];
  readonly containers?: readonly Container[];
  readonly initContainers?: readonly Container[];
  readonly volumes?: readonly Volume[];
}

/** The pod spec of a workload (Deployment, StatefulSet, Job) or of a CronJob's jobs. */
function podSpecOf(o: KubernetesObject): PodSpec | undefined {
  const spec = o.spec as
    { template?: { spec?: PodSpec }; jobTemplate?: { spec?: { template?: { spec?: PodSpec } } } } | undefined;
  return spec?.template?.spec ?? spec?.jobTemplate?.spec?.template?.spec;
}

/** Every ServiceAccount and Secret the pods of `rendered` name. */
export function podReferences(rendered: readonly KubernetesObject[]): PodReference[] {
  const out: PodReference[] = [];
  for (const o of rendered) {
    const pod = podSpecOf(o);
    if (!pod) continue;
    const account = pod.serviceAccountName ?? pod.serviceAccount;
    if (account !== undefined) out.push({ kind: 'ServiceAccount', name: account, field: 'spec.serviceAccountName' });
    (pod.imagePullSecrets ?? []).forEach((s, i) => {
      if (s.name !== undefined) out.push({ kind: 'Secret', name: s.name, field: `spec.imagePullSecrets[${i}]` });
    });
    const containers = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
    for (const c of containers) {
      // The App renders one container, its env by name: the field of the App a variable came from.
      const where = containers.length === 1 ? 'spec' : `${o.kind} ${o.metadata.name}: container ${c.name}`;
      for (const e of c.env ?? []) {
        const name = e.valueFrom?.secretKeyRef?.name;
        if (name !== undefined)
          out.push({ kind: 'Secret', name, field: `${where}.env[${e.name}].valueFrom.secretKeyRef.name` });
      }
      (c.envFrom ?? []).forEach((e, i) => {
        const name = e.secretRef?.name;
        if (name !== undefined) out.push({ kind: 'Secret', name, field: `${where}.envFrom[${i}].secretRef.name` });
      });
    }
    for (const v of pod.volumes ?? []) {
      if (v.secret?.secretName !== undefined)
        out.push({ kind: 'Secret', name: v.secret.secretName, field: `the pods' volume ${v.name} (secret)` });
      for (const source of v.projected?.sources ?? [])
        if (source.secret?.name !== undefined)
          out.push({
            kind: 'Secret',
            name: source.secret.name,
            field: `the pods' volume ${v.name} (projected secret)`,
          });
    }
  }
  return out;
}

const FLAG = { ServiceAccount: '--app-service-accounts', Secret: '--app-secrets' } as const;

/**
 * One message per reference of the App's rendered pods that the policy does not allow (none: the App
 * may be applied), each naming the field, the value and what is allowed.
 */
export function refusedReferences(
  cr: CustomResource,
  rendered: readonly KubernetesObject[],
  policy: AppReferencePolicy | undefined,
): string[] {
  const lists = { ServiceAccount: policy?.serviceAccounts, Secret: policy?.secrets };
  if (Object.values(lists).every((l) => l === undefined || allowsAny(l))) return [];
  const namespace = cr.metadata.namespace ?? '';
  const own = (cr.spec as { database?: unknown } | undefined)?.database
    ? databaseBindingSecretName(cr.metadata.name)
    : undefined;
  const refused = new Set<string>();
  for (const r of podReferences(rendered)) {
    const allowed = lists[r.kind];
    if (allowed === undefined || allowListAllows(allowed, namespace, r.name)) continue;
    if (r.kind === 'Secret' && r.name === own) continue;
    const what =
      allowed.length === 0
        ? r.kind === 'ServiceAccount'
          ? 'Apps run only as their namespace default ServiceAccount'
          : 'Apps name no Secret but their own database binding'
        : `Apps may name only the ${r.kind}s ${allowed.join(', ')}`;
    refused.add(
      `${r.field}: ${r.kind} ${JSON.stringify(r.name)} is not allowed: this operator's ${FLAG[r.kind]} says ${what}`,
    );
  }
  return [...refused];
}
