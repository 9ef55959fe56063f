import { ApiObject, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import type { DatabaseAccess } from '../app/database.js';
import { ManagedApp } from '../app/managed-app.js';
import type { KubernetesObject } from '../common/custom-resource.js';
import { customResourceSpec } from '../common/custom-resource.js';
import { refuseDuplicateObjects } from '../common/unique-objects.js';
import { resolveSpec } from '../schema/kind.js';
import { InvalidSpecError } from '../schema/validate.js';
import { MYSQL_PORT, clusterNames, databaseSelector } from './layout.js';
import type { MySQLClusterNames } from './layout.js';
import { renderMySQLClusterObjects } from './mysql-cluster-objects.js';
import { MYSQL_CLUSTER } from './spec.js';
import type { MySQLClusterSpec, ResolvedMySQLClusterSpec } from './spec.generated.js';

/** What {@link MySQLCluster.grant} gives an App. */
export interface GrantOptions {
  /** The database (schema): created when missing, never dropped. */
  readonly database: string;
  /**
   * readWrite: read and write data and manage the tables of the database. readOnly: SELECT and SHOW VIEW.
   * @default 'readWrite'
   */
  readonly access?: DatabaseAccess;
}

/** The props of {@link MySQLCluster}: exactly the `spec` of a MySQLCluster resource. */
export type MySQLClusterProps = MySQLClusterSpec;

/**
 * A highly available MySQL cluster, as the MySQLCluster resource (`recon8s.dev/v1alpha1`) that the
 * recon8s controller reconciles: applied where the operator runs, it becomes a StatefulSet of
 * identical members, one of them the writable primary and the others semi-synchronous GTID replicas,
 * with failover, switchover, backups and a status, and a credentials Secret with random passwords.
 *
 * Why the resource and not its StatefulSet: a MySQL cluster is only a database together with the
 * controller that makes one member writable and moves that role when a member is lost (every member
 * starts read-only, so that two can never take writes). The controller acts on resources it owns and
 * never adopts objects it did not create, so the plain objects, synthesized and applied on their own,
 * would be a cluster that never takes a write. (An App is different: its Deployment and Service run
 * without any controller, so {@link App} renders them and {@link ManagedApp} is the resource form.)
 *
 * The props are validated at construction exactly as the API server and the controller validate the
 * resource, and the objects the controller will create are checked at synth against every other
 * object of the app (an App "db-primary" beside a MySQLCluster "db" fails synth). To review those
 * objects: {@link MySQLCluster.renderObjects}, or `recon8s render` on the synthesized file.
 *
 * The construct id is the cluster's name, from which every child's name is derived: the StatefulSet
 * `<name>`, the Services `<name>-primary` (writes), `<name>-replicas` (reads) and `<name>-headless`,
 * the Secret `<name>-credentials` (unless `credentialsSecretName` names one of yours), and so on.
 */
export class MySQLCluster extends Construct {
  /** The props with every default applied: what the controller renders from. */
  readonly spec: ResolvedMySQLClusterSpec;
  /** The MySQLCluster resource. */
  readonly resource: ApiObject;
  /** The names of the objects the controller creates for it. */
  readonly names: MySQLClusterNames;
  /**
   * The Secret with the passwords (keys `root-password`, `replication-password`, `admin-password`):
   * `credentialsSecretName`, or `<name>-credentials`, which the controller creates with random
   * passwords when it is missing. An application reads `root-password` from it, never from props.
   */
  readonly credentialsSecretName: string;
  /** Host:port for writes, within the namespace. */
  readonly primaryEndpoint: string;
  /** Host:port for reads, within the namespace. */
  readonly replicasEndpoint: string;
  /** The labels the members are selected by. */
  readonly podSelector: Readonly<Record<string, string>>;
  private readonly props: MySQLClusterProps;
  private objects?: readonly KubernetesObject[];

  /** @throws InvalidSpecError listing every problem, when the name or the props are invalid. */
  constructor(scope: Construct, id: string, props: MySQLClusterProps = {}) {
    // Validate before the construct exists: an invalid spec must leave nothing half-built behind.
    const spec = resolveSpec<ResolvedMySQLClusterSpec>(MYSQL_CLUSTER, id, props);
    super(scope, id);
    this.spec = spec;
    this.props = customResourceSpec(props);
    this.names = clusterNames(id, spec.credentialsSecretName);
    this.credentialsSecretName = this.names.credentialsSecret;
    this.primaryEndpoint = `${this.names.primaryService}:${MYSQL_PORT}`;
    this.replicasEndpoint = `${this.names.replicasService}:${MYSQL_PORT}`;
    this.podSelector = databaseSelector(id);
    this.resource = new ApiObject(this, 'resource', {
      apiVersion: `${MYSQL_CLUSTER.group}/${MYSQL_CLUSTER.version}`,
      kind: MYSQL_CLUSTER.kind,
      metadata: { name: id },
      spec: this.props,
    });
    refuseDuplicateObjects(this, () => this.renderObjects());
  }

  /**
   * Gives an App an account of its own on a database of this cluster: sets the App's `spec.database`,
   * from which the controller creates the database (if missing), the account with a generated password
   * in the Secret `<app>-db` (owned by the App), and exactly the grant asked, and wires the App's
   * container (DB_HOST, DB_READ_HOST, DB_PORT, DB_NAME, DB_USER, DB_PASSWORD). Deleting the App drops
   * the account, never the database.
   *
   * Only a {@link ManagedApp} can be granted: a plain App's Deployment is applied by you, not the
   * controller, so nothing would make its account or its password Secret.
   *
   * @throws InvalidSpecError when the app is not a ManagedApp, is in another namespace, is bound to a
   * database already, or the database name is invalid.
   */
  grant(app: Construct, options: GrantOptions): void {
    const subject = `MySQLCluster "${this.node.id}" grant`;
    if (!(app instanceof ManagedApp))
      throw new InvalidSpecError(subject, [
        {
          field: 'app',
          value: app.node.path,
          expected:
            'a ManagedApp (the App resource): the account, its password Secret and the grant are made by the recon8s controller, which manages only App resources',
        },
      ]);
    const here = Chart.of(this).namespace;
    const there = Chart.of(app).namespace;
    if (here !== there)
      throw new InvalidSpecError(subject, [
        {
          field: 'app',
          value: `${there ?? '(no namespace)'}/${app.node.id}`,
          expected: `an App in the namespace of the cluster (${here ?? '(no namespace)'}): an App binds a MySQLCluster of its own namespace`,
        },
      ]);
    app.bindDatabase({ cluster: this.node.id, name: options.database, access: options.access ?? 'readWrite' });
  }

  /**
   * The objects the controller applies for this resource (without the credentials Secret, which it
   * generates), as plain JSON: for review and tests. Pure: the same props give the same objects.
   */
  renderObjects(): readonly KubernetesObject[] {
    this.objects ??= renderMySQLClusterObjects(this.node.id, Chart.of(this).namespace, this.props);
    return this.objects;
  }
}
