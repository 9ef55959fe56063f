import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { Construct } from 'constructs';
import type { KubernetesObject } from '../common/custom-resource.js';
import { customResourceSpec, synthesizeAlone } from '../common/custom-resource.js';
import { selectorLabels } from '../common/metadata.js';
import { refuseDuplicateObjects } from '../common/unique-objects.js';
import { resolveSpec } from '../schema/kind.js';
import { InvalidSpecError } from '../schema/validate.js';
import type { AppProps } from './app.js';
import { App, markControlledScope } from './app.js';
import { databaseBindingSecretName } from './database.js';
import { APP } from './spec.js';
import type { AppDatabase, ResolvedAppSpec } from './spec.generated.js';

/**
 * An application managed by the recon8s controller: the App resource (`recon8s.dev/v1alpha1`) it
 * reconciles, rather than the objects themselves ({@link App}).
 *
 * What each form gives: {@link App} synthesizes the Deployment, Service and companions, which run
 * with no operator at all, and whose lifecycle is `kubectl apply` (or your ApplySet). This one
 * synthesizes only the resource: the controller renders the same objects with the same construct,
 * owns them (a child deleted or edited by hand is put back, one no longer rendered is pruned), and
 * reports `status` (conditions, ready replicas) on the resource, so `kubectl get apps` and
 * `kubectl wait --for=condition=Ready` work.
 *
 * Only this form can have a database account (`database`, or `MySQLCluster.grant()`): the controller
 * makes the account, its password and the grant.
 *
 * Validated at construction as the API server and the controller validate it; the objects the
 * controller will create are checked at synth against every other object of the app.
 */
export class ManagedApp extends Construct {
  /** The App resource. */
  readonly resource: ApiObject;
  /** The labels the pods are selected by. */
  readonly selector: Readonly<Record<string, string>>;
  private props: AppProps;
  private resolved: ResolvedAppSpec;
  private objects?: readonly KubernetesObject[];

  /** @throws InvalidSpecError listing every problem, when the name or the props are invalid. */
  constructor(scope: Construct, id: string, props: AppProps) {
    const spec = resolveSpec<ResolvedAppSpec>(APP, id, props);
    super(scope, id);
    this.resolved = spec;
    this.props = customResourceSpec(props);
    this.selector = Object.freeze(selectorLabels({ name: id, instance: id }));
    this.resource = new ApiObject(this, 'resource', {
      apiVersion: `${APP.group}/${APP.version}`,
      kind: APP.kind,
      metadata: { name: id },
      spec: this.props,
    });
    refuseDuplicateObjects(this, () => this.renderObjects());
  }

  /** The props with every default applied. */
  get spec(): ResolvedAppSpec {
    return this.resolved;
  }

  /**
   * The Secret the controller writes for the database binding (keys of the servicebinding.io shape:
   * host, port, database, username, password...), when the App has one.
   */
  get databaseSecretName(): string | undefined {
    return this.resolved.database ? databaseBindingSecretName(this.node.id) : undefined;
  }

  /**
   * Sets `spec.database` (what `MySQLCluster.grant()` calls). An App has one binding: a second, to
   * another database, is refused.
   * @throws InvalidSpecError when the binding is invalid or the App is bound already.
   */
  bindDatabase(database: AppDatabase): void {
    const current = this.props.database;
    if (current !== undefined) {
      if (JSON.stringify(customResourceSpec(current)) === JSON.stringify(customResourceSpec(database))) return;
      throw new InvalidSpecError(`App "${this.node.id}"`, [
        {
          field: 'spec.database',
          value: database,
          expected: `one database binding per App; it has ${JSON.stringify(current)} already`,
        },
      ]);
    }
    const props = customResourceSpec({ ...this.props, database });
    this.resolved = resolveSpec<ResolvedAppSpec>(APP, this.node.id, props);
    this.props = props;
    this.objects = undefined;
    this.resource.addJsonPatch(JsonPatch.add('/spec/database', props.database));
  }

  /** The objects the controller applies for this resource, as plain JSON: for review and tests. */
  renderObjects(): readonly KubernetesObject[] {
    this.objects ??= synthesizeAlone(
      Chart.of(this).namespace,
      (chart) => new App(markControlledScope(chart), this.node.id, this.props),
    );
    return this.objects;
  }
}
