import { ApiObject, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import type { KubernetesObject } from '../common/custom-resource.js';
import { customResourceSpec, synthesizeAlone } from '../common/custom-resource.js';
import { selectorLabels } from '../common/metadata.js';
import { refuseDuplicateObjects } from '../common/unique-objects.js';
import { resolveSpec } from '../schema/kind.js';
import type { AppProps } from './app.js';
import { App } from './app.js';
import { APP } from './spec.js';
import type { ResolvedAppSpec } from './spec.generated.js';

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
 * Validated at construction as the API server and the controller validate it; the objects the
 * controller will create are checked at synth against every other object of the app.
 */
export class ManagedApp extends Construct {
  /** The props with every default applied. */
  readonly spec: ResolvedAppSpec;
  /** The App resource. */
  readonly resource: ApiObject;
  /** The labels the pods are selected by. */
  readonly selector: Readonly<Record<string, string>>;
  private readonly props: AppProps;
  private objects?: readonly KubernetesObject[];

  /** @throws InvalidSpecError listing every problem, when the name or the props are invalid. */
  constructor(scope: Construct, id: string, props: AppProps) {
    const spec = resolveSpec<ResolvedAppSpec>(APP, id, props);
    super(scope, id);
    this.spec = spec;
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

  /** The objects the controller applies for this resource, as plain JSON: for review and tests. */
  renderObjects(): readonly KubernetesObject[] {
    this.objects ??= synthesizeAlone(Chart.of(this).namespace, (chart) => new App(chart, this.node.id, this.props));
    return this.objects;
  }
}
