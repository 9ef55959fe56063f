// The constructs that synthesize a custom resource (MySQLCluster, ManagedApp): what a cdk8s user applies
// is the resource the controller reconciles, and what the controller then creates is the same as
// render() of it, checked at synth against the rest of the app.
import assert from 'node:assert/strict';
import { App as Cdk8sApp, Chart } from 'cdk8s';
import type { KubernetesObject, MySQLClusterProps } from '../../constructs/index.js';
import { App, InvalidSpecError, ManagedApp, MySQLCluster, render } from '../../constructs/index.js';

const chart = (namespace = 'shop'): Chart =>
  new Chart(new Cdk8sApp(), 'shop', { namespace, disableResourceNameHashes: true });
const only = (c: Chart): KubernetesObject => {
  const objects = c.toJson() as KubernetesObject[];
  assert.equal(objects.length, 1, JSON.stringify(objects.map((o) => `${o.kind}/${o.metadata.name}`)));
  return objects[0] as KubernetesObject;
};

describe('MySQLCluster (the construct)', () => {
  it('synthesizes the MySQLCluster resource with the props as its spec, and nothing else', () => {
    const c = chart();
    new MySQLCluster(c, 'db', { replicas: 3, storage: { size: '20Gi' }, image: undefined });
    assert.deepEqual(only(c), {
      apiVersion: 'recon8s.dev/v1alpha1',
      kind: 'MySQLCluster',
      metadata: { name: 'db', namespace: 'shop' },
      // No defaults written in: the controller applies them, as for a resource written in YAML.
      spec: { replicas: 3, storage: { size: '20Gi' } },
    });
  });

  it('renders, for review, exactly what the controller applies for the synthesized resource', () => {
    const c = chart();
    const db = new MySQLCluster(c, 'db', {
      replicas: 2,
      backup: { schedule: '0 3 * * *', persistentVolumeClaimName: 'b' },
    });
    const objects = db.renderObjects();
    assert.deepEqual(objects, render(only(c) as never));
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`).sort(), [
      'ConfigMap/shop/db-config',
      'ConfigMap/shop/db-scripts',
      'CronJob/shop/db-backup',
      'NetworkPolicy/shop/db-mysql',
      'PodDisruptionBudget/shop/db-mysql',
      'Service/shop/db-headless',
      'Service/shop/db-primary',
      'Service/shop/db-replicas',
      'StatefulSet/shop/db',
    ]);
  });

  it('keeps the resource as constructed when the caller later changes its props object', () => {
    const c = chart();
    const props: { replicas: number } = { replicas: 3 };
    new MySQLCluster(c, 'db', props);
    props.replicas = 1;
    assert.deepEqual(only(c).spec, { replicas: 3 });
  });

  it('names what an application needs: the credentials Secret and the endpoints', () => {
    const db = new MySQLCluster(chart(), 'db', {});
    assert.equal(db.credentialsSecretName, 'db-credentials');
    assert.equal(db.primaryEndpoint, 'db-primary:3306');
    assert.equal(db.replicasEndpoint, 'db-replicas:3306');
    const own = new MySQLCluster(chart(), 'db', { credentialsSecretName: 'mine' });
    assert.equal(own.credentialsSecretName, 'mine');
  });

  it('refuses invalid props at construction, naming the field, the value and what was expected', () => {
    const c = chart();
    assert.throws(
      () => new MySQLCluster(c, 'db', { replicas: 12 } as MySQLClusterProps),
      (e: unknown) => e instanceof InvalidSpecError && /spec\.replicas: got 12, expected/.test(e.message),
    );
    assert.equal(c.node.children.length, 0, 'nothing half-built is left in the chart');
  });

  it('fails synth when another object of the app has the name of one of its future children', () => {
    const app = new Cdk8sApp();
    const c = new Chart(app, 'shop', { namespace: 'shop', disableResourceNameHashes: true });
    new MySQLCluster(c, 'db', {});
    new ManagedApp(c, 'db-primary', { image: 'nginx', ports: [{ port: 80 }] });
    assert.throws(
      () => app.synthYaml(),
      /Service shop\/db-primary is rendered twice, by shop\/db and by shop\/db-primary/,
    );
  });

  it('synthesizes two clusters of one name in different namespaces', () => {
    const app = new Cdk8sApp();
    new MySQLCluster(new Chart(app, 'a', { namespace: 'a' }), 'db', {});
    new MySQLCluster(new Chart(app, 'b', { namespace: 'b' }), 'db', {});
    assert.doesNotThrow(() => app.synthYaml());
  });
});

describe('ManagedApp', () => {
  const props = { image: 'nginx', replicas: 2, ports: [{ port: 80, targetPort: 8080 }] };

  it('synthesizes the App resource; the controller renders from it what App synthesizes', () => {
    const c = chart();
    const managed = new ManagedApp(c, 'web', props);
    const resource = only(c);
    assert.deepEqual(resource, {
      apiVersion: 'recon8s.dev/v1alpha1',
      kind: 'App',
      metadata: { name: 'web', namespace: 'shop' },
      spec: props,
    });
    const plain = chart();
    new App(plain, 'web', props);
    assert.deepEqual(managed.renderObjects(), render(resource as never));
    assert.deepEqual(
      [...managed.renderObjects()].map((o) => `${o.kind}/${o.metadata.name}`),
      (plain.toJson() as KubernetesObject[]).map((o) => `${o.kind}/${o.metadata.name}`),
    );
  });

  it('fails synth beside an App of the same name and namespace, whose objects it would fight over', () => {
    const app = new Cdk8sApp();
    const c = new Chart(app, 'shop', { namespace: 'shop', disableResourceNameHashes: true });
    new App(c, 'web', props);
    new ManagedApp(new Chart(app, 'again', { namespace: 'shop', disableResourceNameHashes: true }), 'web', props);
    assert.throws(() => app.synthYaml(), /Deployment shop\/web is rendered twice, by again\/web and by shop\/web/);
  });
});
