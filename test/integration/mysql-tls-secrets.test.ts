// The members' certificate Secrets, as ensureTls keeps them against a real API server: generated once
// and then left alone, renewed with a compare-and-swap, grown with the cluster, owned by it (garbage
// collected with it), and never written when the Secret is a user's or someone else's.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { MYSQL_CLUSTER } from '../../constructs/index.js';
import type { TlsState } from '../../lib/controller/mysql-cluster/tls.js';
import { ensureTls } from '../../lib/controller/mysql-cluster/tls.js';
import type { CustomResource } from '../../lib/controller/kind-controller.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { HttpMethod, PatchStrategy, createKubeClient, getObject } from '../../lib/kube/index.js';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { installCrds } from './support/controller.js';

const DAY = 86_400_000;

describe('the members certificate Secrets (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let client: KubeClient;
  let namespace: string;

  before(async () => {
    await installCrds(controlPlane());
    client = createKubeClient({ kubeconfigPath: controlPlane().kubeconfigPath, fieldManager: 'recon8s-tests' });
  });
  after(() => client?.close());
  beforeEach(async () => {
    namespace = await freshNamespace('mysql-tls');
  });

  const crPath = (name = '') =>
    `/apis/${MYSQL_CLUSTER.group}/${MYSQL_CLUSTER.version}/namespaces/${namespace}/${MYSQL_CLUSTER.plural}${name ? `/${name}` : ''}`;
  const createCluster = (name: string, spec: Record<string, unknown> = {}): Promise<CustomResource> =>
    client.requestJson<CustomResource>({
      method: HttpMethod.POST,
      path: crPath(),
      body: JSON.stringify({
        apiVersion: `${MYSQL_CLUSTER.group}/${MYSQL_CLUSTER.version}`,
        kind: MYSQL_CLUSTER.kind,
        metadata: { name },
        spec: { replicas: 3, ...spec },
      }),
      headers: { 'Content-Type': 'application/json' },
    });
  const secret = (name: string): Promise<V1Secret | undefined> =>
    getObject<V1Secret>(client, `/api/v1/namespaces/${namespace}/secrets/${name}`);
  const pem = (s: V1Secret | undefined, key: string): string =>
    Buffer.from(s?.data?.[key] ?? '', 'base64').toString('utf8');
  const ready = (t: TlsState): Extract<TlsState, { caPem: string }> => {
    assert.ok('caPem' in t, `no certificate: ${'message' in t ? t.message : ''}`);
    return t;
  };

  it('generates a CA and a member certificate once, owned by the cluster, then reads them without writing', async () => {
    const cr = await createCluster('db');
    const first = ready(await ensureTls(client, cr, new Date()));
    assert.equal(first.state, 'issued');
    assert.equal(first.secretName, 'db-tls');
    const tls = await secret('db-tls');
    const ca = await secret('db-ca');
    assert.equal(tls?.type, 'kubernetes.io/tls');
    assert.deepEqual(Object.keys(tls?.data ?? {}).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    assert.equal(pem(tls, 'ca.crt'), pem(ca, 'tls.crt'));
    assert.equal(first.caPem, pem(ca, 'tls.crt'));
    const cert = new X509Certificate(pem(tls, 'tls.crt'));
    assert.ok(cert.verify(new X509Certificate(first.caPem).publicKey));
    assert.equal(cert.checkHost('db-2.db-headless'), 'db-2.db-headless');
    assert.equal(cert.checkHost(`db-primary.${namespace}.svc`), `db-primary.${namespace}.svc`);
    for (const s of [tls, ca])
      assert.deepEqual(
        s?.metadata?.ownerReferences?.map((r) => `${r.kind}/${r.name}/${r.uid}/${r.controller}`),
        [`MySQLCluster/db/${cr.metadata.uid}/true`],
      );

    const again = ready(await ensureTls(client, cr, new Date()));
    assert.equal(again.state, 'ready');
    assert.equal((await secret('db-tls'))?.metadata?.resourceVersion, tls?.metadata?.resourceVersion);
    assert.equal((await secret('db-ca'))?.metadata?.resourceVersion, ca?.metadata?.resourceVersion);
  });

  it('renews the member certificate with the same CA once a third of its year is left, and for a member added by scaling up', async () => {
    let cr = await createCluster('db');
    const issued = ready(await ensureTls(client, cr, new Date()));
    const before = await secret('db-tls');
    const renewed = ready(await ensureTls(client, cr, new Date(Date.now() + 250 * DAY)));
    assert.equal(renewed.state, 'renewed');
    assert.match(renewed.reason ?? '', /expires at/);
    assert.equal(
      renewed.caPem,
      issued.caPem,
      'renewal changed the CA: every client would have to be given the new one',
    );
    const after = await secret('db-tls');
    assert.notEqual(pem(after, 'tls.crt'), pem(before, 'tls.crt'));
    assert.notEqual(renewed.notAfter, issued.notAfter);

    cr = await client.requestJson<CustomResource>({
      method: HttpMethod.PATCH,
      path: crPath('db'),
      body: JSON.stringify({ spec: { replicas: 4 } }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
    const grown = ready(await ensureTls(client, cr, new Date()));
    assert.equal(grown.state, 'renewed');
    assert.match(grown.reason ?? '', /lacks db-3\.db-headless/);
    assert.equal(
      new X509Certificate(pem(await secret('db-tls'), 'tls.crt')).checkHost('db-3.db-headless'),
      'db-3.db-headless',
    );
  });

  it("only reads a Secret named in spec.tlsSecretName (a cert-manager Certificate's), and says what is missing", async () => {
    const cr = await createCluster('db', { tlsSecretName: 'db-cert' });
    const missing = await ensureTls(client, cr, new Date());
    assert.equal(missing.state, 'missing');
    assert.match(
      'message' in missing ? missing.message : '',
      /Secret db-cert named in spec.tlsSecretName does not exist/,
    );

    const ca = issueCa('corporate CA', new Date());
    const cert = issueServerCertificate(ca, 'db', ['db-0.db-headless'], new Date());
    await client.request({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${namespace}/secrets`,
      body: JSON.stringify({
        metadata: { name: 'db-cert' },
        type: 'kubernetes.io/tls',
        stringData: { 'tls.crt': cert.certPem, 'tls.key': cert.keyPem },
      }),
      headers: { 'Content-Type': 'application/json' },
    });
    const incomplete = await ensureTls(client, cr, new Date());
    assert.match('message' in incomplete ? incomplete.message : '', /has no ca\.crt key/);
    const rv = (await secret('db-cert'))?.metadata?.resourceVersion;
    await client.request({
      method: HttpMethod.PATCH,
      path: `/api/v1/namespaces/${namespace}/secrets/db-cert`,
      body: JSON.stringify({ stringData: { 'ca.crt': ca.certPem } }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
    const used = ready(await ensureTls(client, cr, new Date(Date.now() + 300 * DAY)));
    assert.equal(used.state, 'ready', 'a user Secret is never renewed by recon8s (cert-manager renews its own)');
    assert.equal(used.caPem, ca.certPem);
    assert.notEqual((await secret('db-cert'))?.metadata?.resourceVersion, rv);
    assert.equal(await secret('db-ca'), undefined, 'a CA was generated beside a Secret of the user');
  });

  it('never overwrites a Secret of the default name that recon8s did not generate for this cluster', async () => {
    const cr = await createCluster('db');
    await client.request({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${namespace}/secrets`,
      body: JSON.stringify({ metadata: { name: 'db-tls' }, stringData: { note: 'mine' } }),
      headers: { 'Content-Type': 'application/json' },
    });
    const refused = await ensureTls(client, cr, new Date());
    assert.equal(refused.state, 'foreign');
    assert.match('message' in refused ? refused.message : '', /Secret db-tls exists and was not generated by recon8s/);
    assert.deepEqual(Object.keys((await secret('db-tls'))?.data ?? {}), ['note']);
    assert.equal(await secret('db-ca'), undefined);
  });
});
