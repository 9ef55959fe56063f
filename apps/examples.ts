import { Chart } from 'cdk8s';
import type { Construct } from 'constructs';
import * as recon8s from '../constructs/index.js';

/** The CRDs a cluster needs before App and MySQLCluster resources can be created. */
export class CrdsChart extends Chart {
  constructor(scope: Construct, id: string) {
    super(scope, id, { disableResourceNameHashes: true });
    new recon8s.Recon8sCrds(this, 'crds');
  }
}

/** The example database, as a cdk8s user writes it (and as the spec of a MySQLCluster resource). */
export const EXAMPLE_DB: recon8s.MySQLClusterProps = {
  replicas: 3,
  version: '9.7',
  storage: { size: '20Gi' },
  mysqlConf: { max_connections: '500' },
  backup: { schedule: '0 3 * * *', persistentVolumeClaimName: 'db-backups', retain: 14 },
};

/** The example web application; it reads the database password from the cluster's credentials Secret. */
export const EXAMPLE_WEB: recon8s.AppProps = {
  image: 'nginxinc/nginx-unprivileged:1.27-alpine',
  replicas: 2,
  ports: [{ name: 'http', port: 80, targetPort: 8080 }],
  env: [
    { name: 'DB_HOST', value: 'db-primary' },
    { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db-credentials', key: 'root-password' } } },
  ],
  resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } },
  readinessProbe: { httpGet: { path: '/', port: 'http' } },
  // The unprivileged nginx image runs as uid 101.
  securityContext: { runAsUser: 101, runAsGroup: 101 },
};

/**
 * Example infrastructure written with the constructs: a web App in front of a MySQL cluster.
 * The database password is never here: the App reads it from the cluster's credentials Secret.
 */
export class ExampleChart extends Chart {
  readonly web: recon8s.App;
  readonly db: recon8s.MySQLCluster;

  constructor(scope: Construct, id: string, props: { readonly namespace: string }) {
    super(scope, id, { namespace: props.namespace, disableResourceNameHashes: true });

    this.db = new recon8s.MySQLCluster(this, 'db', EXAMPLE_DB);
    this.web = new recon8s.App(this, 'web', EXAMPLE_WEB);
  }
}
