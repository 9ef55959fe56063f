// An App's database binding in the constructs: `db.grant(app, ...)` and `spec.database` give the App
// resource the binding, and the Deployment the controller renders from it (the same as the construct's
// renderObjects()) refers to the binding Secret for the account, never to a password.
import assert from 'node:assert/strict';
import { App as Cdk8sApp, Chart } from 'cdk8s';
import type { k8s } from 'cdk8s-plus-28';
import type { AppProps, KubernetesObject } from '../../constructs/index.js';
import { App, InvalidSpecError, ManagedApp, MySQLCluster, render } from '../../constructs/index.js';

const chart = (namespace: string | undefined = 'shop', id = 'shop'): Chart =>
  new Chart(new Cdk8sApp(), id, { namespace, disableResourceNameHashes: true });
const WEB: AppProps = { image: 'nginx', env: [{ name: 'MODE', value: 'production' }] };

const resourceOf = (c: Chart, name: string): KubernetesObject => {
  const found = (c.toJson() as KubernetesObject[]).find((o) => o.kind === 'App' && o.metadata.name === name);
  assert.ok(found, `no App ${name} synthesized`);
  return found;
};
const podOf = (objects: readonly KubernetesObject[]): k8s.PodSpec => {
  const deployment = objects.find((o) => o.kind === 'Deployment') as unknown as { spec: k8s.DeploymentSpec };
  return deployment.spec.template.spec as k8s.PodSpec;
};
const problemOf = (f: () => unknown): { field: string; expected: string } => {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof InvalidSpecError, String(e));
    const p = e.problems[0];
    assert.ok(p);
    return { field: p.field, expected: p.expected };
  }
  assert.fail('no error');
};

describe('database binding (constructs)', () => {
  it('db.grant(app) sets spec.database on the App resource, access readWrite by default', () => {
    const c = chart();
    const db = new MySQLCluster(c, 'db', {});
    const web = new ManagedApp(c, 'web', WEB);
    db.grant(web, { database: 'shop' });
    assert.deepEqual(resourceOf(c, 'web').spec, {
      ...WEB,
      database: { cluster: 'db', name: 'shop', access: 'readWrite' },
    });
    assert.deepEqual(web.spec.database, { cluster: 'db', name: 'shop', access: 'readWrite' });
    assert.equal(web.databaseSecretName, 'web-db');
  });

  it('readOnly is passed through', () => {
    const c = chart();
    const db = new MySQLCluster(c, 'db', {});
    const report = new ManagedApp(c, 'report', { image: 'nginx' });
    db.grant(report, { database: 'shop', access: 'readOnly' });
    assert.equal((resourceOf(c, 'report').spec as AppProps).database?.access, 'readOnly');
  });

  it('the Deployment gets the hosts, the port and the database as values, the account from the binding Secret', () => {
    const c = chart();
    const db = new MySQLCluster(c, 'db', {});
    const web = new ManagedApp(c, 'web', WEB);
    db.grant(web, { database: 'shop' });
    const pod = podOf(web.renderObjects());
    const container = pod.containers[0];
    assert.ok(container);
    assert.deepEqual(container.env, [
      { name: 'MODE', value: 'production' },
      { name: 'DB_HOST', value: 'db-primary' },
      { name: 'DB_READ_HOST', value: 'db-replicas' },
      { name: 'DB_PORT', value: '3306' },
      { name: 'DB_NAME', value: 'shop' },
      { name: 'DB_USER', valueFrom: { secretKeyRef: { name: 'web-db', key: 'username' } } },
      { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'web-db', key: 'password' } } },
      { name: 'DB_SSL_CA', value: '/bindings/database/ca' },
      { name: 'SERVICE_BINDING_ROOT', value: '/bindings' },
    ]);
    assert.deepEqual(container.volumeMounts, [
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'database-binding', mountPath: '/bindings/database', readOnly: true },
    ]);
    assert.deepEqual(pod.volumes, [
      { name: 'tmp', emptyDir: {} },
      { name: 'database-binding', secret: { secretName: 'web-db' } },
    ]);
  });

  it('synth and the controller render the same objects for a granted App', () => {
    const c = chart();
    const db = new MySQLCluster(c, 'db', {});
    const web = new ManagedApp(c, 'web', WEB);
    db.grant(web, { database: 'shop' });
    assert.deepEqual(web.renderObjects(), render(resourceOf(c, 'web') as never));
  });

  it('the spec form (database in the props) gives the same resource as grant()', () => {
    const a = chart();
    new ManagedApp(a, 'web', { ...WEB, database: { cluster: 'db', name: 'shop', access: 'readWrite' } });
    const b = chart();
    db(b).grant(new ManagedApp(b, 'web', WEB), { database: 'shop' });
    assert.deepEqual(resourceOf(a, 'web'), resourceOf(b, 'web'));
  });

  it('an App without a binding renders no database env, volume or mount', () => {
    const web = new ManagedApp(chart(), 'web', { image: 'nginx' });
    const pod = podOf(web.renderObjects());
    assert.equal(pod.containers[0]?.env, undefined);
    assert.deepEqual(pod.volumes, [{ name: 'tmp', emptyDir: {} }]);
    assert.equal(web.databaseSecretName, undefined);
  });

  it('granting the same binding twice is one binding; another one is refused, naming the first', () => {
    const c = chart();
    const web = new ManagedApp(c, 'web', WEB);
    const cluster = db(c);
    cluster.grant(web, { database: 'shop' });
    cluster.grant(web, { database: 'shop' });
    const p = problemOf(() => web.bindDatabase({ cluster: 'db', name: 'other', access: 'readWrite' }));
    assert.equal(p.field, 'spec.database');
    assert.match(p.expected, /one database binding per App; it has .*"name":"shop"/);
    web.bindDatabase({ cluster: 'db', name: 'shop', access: 'readWrite' });
    assert.deepEqual((resourceOf(c, 'web').spec as AppProps).database, {
      cluster: 'db',
      name: 'shop',
      access: 'readWrite',
    });
  });

  it('a plain App cannot be granted: the error says to use ManagedApp', () => {
    const c = chart();
    const web = new App(c, 'web', WEB);
    const p = problemOf(() => db(c).grant(web, { database: 'shop' }));
    assert.equal(p.field, 'app');
    assert.match(p.expected, /a ManagedApp \(the App resource\)/);
  });

  it('a plain App with spec.database is refused: nothing would make its account', () => {
    const p = problemOf(
      () => new App(chart(), 'web', { ...WEB, database: { cluster: 'db', name: 'shop', access: 'readWrite' } }),
    );
    assert.equal(p.field, 'spec.database');
    assert.match(p.expected, /use ManagedApp/);
  });

  it('an App of another namespace is refused', () => {
    const app = new Cdk8sApp();
    const a = new Chart(app, 'a', { namespace: 'shop' });
    const b = new Chart(app, 'b', { namespace: 'billing' });
    const p = problemOf(() => new MySQLCluster(a, 'db', {}).grant(new ManagedApp(b, 'web', WEB), { database: 'x' }));
    assert.equal(p.field, 'app');
    assert.match(p.expected, /in the namespace of the cluster \(shop\)/);
  });

  describe('validation (as the API server and the controller validate it)', () => {
    const bind =
      (name: string): (() => unknown) =>
      () =>
        new ManagedApp(chart(), 'web', { image: 'nginx', database: { cluster: 'db', name } });

    for (const name of ['mysql', 'sys', 'information_schema', 'performance_schema', 'MySQL', 'SYS']) {
      it(`refuses the system schema ${name}`, () => {
        const p = problemOf(bind(name));
        assert.equal(p.field, 'spec.database.name');
        assert.match(p.expected, /not one of MySQL's system schemas/);
      });
    }

    for (const name of ['', '1shop', 'shop-db', 'shop db', "shop'", 'shop`', 'a'.repeat(65), 'shop$', 'ünï']) {
      it(`refuses the database name ${JSON.stringify(name.length > 20 ? `${name.slice(0, 8)}… (${name.length})` : name)}`, () => {
        const p = problemOf(bind(name));
        assert.equal(p.field, 'spec.database.name');
      });
    }

    for (const name of ['shop', 'Shop_2', '_x', 'a'.repeat(64), 'mysql_app', 'sys2']) {
      it(`accepts the database name ${name.length > 20 ? `of ${name.length} characters` : name}`, () => {
        assert.doesNotThrow(bind(name));
      });
    }

    it('refuses an access other than readWrite or readOnly', () => {
      const p = problemOf(
        () =>
          new ManagedApp(chart(), 'web', {
            image: 'nginx',
            database: { cluster: 'db', name: 'shop', access: 'admin' as never },
          }),
      );
      assert.equal(p.field, 'spec.database.access');
    });

    it('refuses a cluster name that is not a MySQLCluster name', () => {
      const p = problemOf(
        () => new ManagedApp(chart(), 'web', { image: 'nginx', database: { cluster: 'Db_1', name: 'shop' } }),
      );
      assert.equal(p.field, 'spec.database.cluster');
    });

    it('refuses user env that the binding sets', () => {
      const p = problemOf(
        () =>
          new ManagedApp(chart(), 'web', {
            image: 'nginx',
            env: [{ name: 'DB_PASSWORD', value: 'x' }],
            database: { cluster: 'db', name: 'shop' },
          }),
      );
      assert.equal(p.field, 'spec.env');
      assert.match(p.expected, /no env named DB_HOST, .*DB_PASSWORD.* when database is set/);
    });
  });
});

function db(c: Chart, id = 'db'): MySQLCluster {
  return new MySQLCluster(c, id, {});
}
