// Two constructs that render an object of the same kind, namespace and name would overwrite each other
// when applied (the later wins, silently): an App "db-primary" beside a MySQLCluster "db" would take
// the database's Service. Every recon8s construct refuses that at synth, naming both constructs.
//
// A construct that renders a custom resource declares the children the controller will create for it,
// so that the clash is found at synth too, not later as an object the controller refuses to touch.
import { ApiObject } from 'cdk8s';
import type { Construct, IConstruct } from 'constructs';

/** An object, as far as its identity goes: what `kubectl apply` finds it by. */
interface ObjectIdentity {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
}

/** Marks the constructs that check, with the objects they will bring about beyond their own ApiObjects. */
const CHECKS = Symbol.for('recon8s.uniqueObjects');
type Declared = () => readonly ObjectIdentity[];
type Checking = Record<symbol, Declared | undefined>;

/**
 * Fails validation (cdk8s synth) when an object of `scope`, or one it declares, has the identity of
 * another object of the app.
 */
export function refuseDuplicateObjects(scope: Construct, declared: Declared = () => []): void {
  (scope as unknown as Checking)[CHECKS] = declared;
  scope.node.addValidation({ validate: () => duplicatesOf(scope) });
}

interface Rendered {
  readonly key: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  /** The checking construct that renders or declares it (or the ApiObject itself, outside any). */
  readonly by: IConstruct;
}

/** The API group, as ApiObject.apiGroup has it ("core" for v1). */
const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.split('/')[0] : 'core');
const keyOf = (group: string, kind: string, namespace: string | undefined, name: string): string =>
  `${group}/${kind}/${namespace ?? ''}/${name}`;

const declaredBy = (c: IConstruct): Declared | undefined => (c as unknown as Checking)[CHECKS];

/** The outermost checking construct `c` is in (constructs list their scopes from the root down). */
const checker = (c: IConstruct): IConstruct | undefined => c.node.scopes.find((s) => declaredBy(s) !== undefined);

/** Every object of the app: each ApiObject, and each object a checking construct declares. */
function everyObject(root: IConstruct): Rendered[] {
  const all = root.node.findAll();
  return [
    ...all
      .filter((o): o is ApiObject => o instanceof ApiObject)
      .map((o) => ({
        key: keyOf(o.apiGroup, o.kind, o.metadata.namespace, o.name),
        kind: o.kind,
        namespace: o.metadata.namespace,
        name: o.name,
        by: checker(o) ?? o,
      })),
    ...all.flatMap((c) =>
      (declaredBy(c)?.() ?? []).map((d) => ({
        key: keyOf(groupOf(d.apiVersion), d.kind, d.metadata.namespace, d.metadata.name),
        kind: d.kind,
        namespace: d.metadata.namespace,
        name: d.metadata.name,
        by: c,
      })),
    ),
  ];
}

function duplicatesOf(scope: Construct): string[] {
  const all = everyObject(scope.node.root);
  const wanted = new Map(all.filter((o) => o.by === scope).map((o) => [o.key, o]));
  const errors: string[] = [];
  for (const other of all) {
    const clash = other.by === scope ? undefined : wanted.get(other.key);
    if (!clash) continue;
    // Both sides check: the one first by path says it, once.
    if (declaredBy(other.by) && other.by.node.path < scope.node.path) continue;
    const where = clash.namespace ? `${clash.namespace}/` : '';
    errors.push(
      `${clash.kind} ${where}${clash.name} is rendered twice, by ${scope.node.path} and by ${other.by.node.path}: applied, one would overwrite the other. Rename one of them.`,
    );
  }
  return errors;
}
