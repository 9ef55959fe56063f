import { Chart } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import * as recon8s from '../constructs/index.js';

/** The CRDs a cluster needs before App and MySQLCluster resources can be created. */
export class CrdsChart extends Chart {
  constructor(scope: Construct, id: string) {
    super(scope, id, { disableResourceNameHashes: true });
    new recon8s.Recon8sCrds(this, 'crds');
  }
}

/** The claim the example's backups go to: created by the example, so that it runs as written. */
export const EXAMPLE_BACKUP_CLAIM = 'db-backups';

/** The example database, as a cdk8s user writes it (and as the spec of a MySQLCluster resource). */
export const EXAMPLE_DB: recon8s.MySQLClusterProps = {
  replicas: 3,
  version: '9.7',
  storage: { size: '20Gi' },
  mysqlConf: { max_connections: '500' },
  backup: { schedule: '0 3 * * *', persistentVolumeClaimName: EXAMPLE_BACKUP_CLAIM, retain: 14 },
};

/**
 * The example web application. Its database account is its own (ExampleChart grants it the database
 * `shop`): the controller wires DB_HOST, DB_USER, DB_PASSWORD... into its container. Its image is a small web server the project's node has (test/images/web), so the example runs there
 * as written; elsewhere, any image that serves HTTP on 8080 as a non-root uid will do.
 */
export const EXAMPLE_WEB: recon8s.AppProps = {
  image: 'ghcr.io/recon8s/example-web:1',
  replicas: 2,
  ports: [{ name: 'http', port: 80, targetPort: 8080 }],
  resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } },
  readinessProbe: { httpGet: { path: '/healthz', port: 'http' } },
  // The image's own uid.
  securityContext: { runAsUser: 65532, runAsGroup: 65532 },
};

/** What the example web App is granted on the example database. */
export const EXAMPLE_WEB_GRANT: recon8s.GrantOptions = { database: 'shop', access: 'readWrite' };

/**
 * Example infrastructure written with the constructs: a web App in front of a MySQL cluster.
 * Both are resources the recon8s controller reconciles (`recon8s render` on the synthesized file
 * shows the objects it will create). The App has an account of its own on the database `shop`
 * (db.grant), never root's: the controller creates it, with a generated password in the Secret
 * `web-db`, which the App reads. No password is ever here.
 */
export class ExampleChart extends Chart {
  readonly web: recon8s.ManagedApp;
  readonly db: recon8s.MySQLCluster;

  constructor(scope: Construct, id: string, props: { readonly namespace: string }) {
    super(scope, id, { namespace: props.namespace, disableResourceNameHashes: true });

    this.db = new recon8s.MySQLCluster(this, 'db', EXAMPLE_DB);
    // Backups need somewhere to go: a claim of the namespace's default storage class (recon8s never
    // creates or deletes a backup claim; it keeps backups beyond the cluster's life).
    new k8s.KubePersistentVolumeClaim(this, 'backups', {
      metadata: { name: EXAMPLE_BACKUP_CLAIM },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: k8s.Quantity.fromString('20Gi') } } },
    });
    this.web = new recon8s.ManagedApp(this, 'web', EXAMPLE_WEB);
    this.db.grant(this.web, EXAMPLE_WEB_GRANT);
  }
}
