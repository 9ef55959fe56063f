// Two constructs that render an object of the same kind, namespace and name would overwrite each other
// when applied (the later wins, silently): an App "db-primary" beside a MySQLCluster "db" would take
// the database's Service. Every recon8s construct refuses that at synth, naming both constructs.
import { ApiObject } from 'cdk8s';
import type { Construct, IConstruct } from 'constructs';

/** Marks the constructs that check: of two that clash, only the first (by path) reports. */
const CHECKS = Symbol.for('recon8s.uniqueObjects');

/** Fails validation (cdk8s synth) when an object of `scope` has the identity of another object of the app. */
export function refuseDuplicateObjects(scope: Construct): void {
  (scope as unknown as Record<symbol, boolean>)[CHECKS] = true;
  scope.node.addValidation({ validate: () => duplicatesOf(scope) });
}

const identity = (o: ApiObject): string => `${o.apiGroup}/${o.kind}/${o.metadata.namespace ?? ''}/${o.name}`;

function checker(c: IConstruct): IConstruct | undefined {
  return c.node.scopes.find((s) => (s as unknown as Record<symbol, boolean>)[CHECKS]);
}

function duplicatesOf(scope: Construct): string[] {
  const mine = scope.node.findAll().filter((c): c is ApiObject => c instanceof ApiObject);
  if (mine.length === 0) return [];
  const wanted = new Map(mine.map((o) => [identity(o), o]));
  const errors: string[] = [];
  for (const other of scope.node.root.node.findAll()) {
    if (!(other instanceof ApiObject) || mine.includes(other)) continue;
    const clash = wanted.get(identity(other));
    if (!clash) continue;
    const owner = checker(other);
    // Both sides check: the one first by path says it, once.
    if (owner && owner.node.path < scope.node.path) continue;
    const where = clash.metadata.namespace ? `${clash.metadata.namespace}/` : '';
    errors.push(
      `${clash.kind} ${where}${clash.name} is rendered twice, by ${scope.node.path} and by ${owner?.node.path ?? other.node.path}: applied, one would overwrite the other. Rename one of them.`,
    );
  }
  return errors;
}
