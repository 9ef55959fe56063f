// spec.tls.issuerRef against a real API server, with cert-manager's own CRDs and cert-manager's own
// controllers (test/cert-manager: built from the cert-manager module of the Go module proxy, run on the
// host): no CRDs (CertManagerMissing), no issuer yet (CertificatePending quoting cert-manager), issued by a
// CA Issuer (the members' Secret holds that CA's ca.crt and a certificate it signed for every name),
// renewed by cert-manager (a new certificate, same CA, a new expiry the members reload to) and reissued
// for a member added. The StatefulSet is held back until the Secret is usable.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Secret, V1StatefulSet } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { ensureTls } from '../../lib/controller/mysql-cluster/tls.js';
import type { CustomResource as LiveCustomResource } from '../../lib/controller/kind-controller.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { HttpMethod, PatchStrategy, createKubeClient, getObject } from '../../lib/kube/index.js';
import type { CertManagerBuild, RunningCertManager } from '../cert-manager/index.js';
import {
  CERT_MANAGER_VERSION,
  certManagerBuild,
  installCertManagerCrds,
  removeCertManagerCrds,
  startCertManager,
} from '../cert-manager/index.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';
import type { ResourceHelpers } from './support/resources.js';
import { conditionOf, resourceHelpers } from './support/resources.js';

interface Certificate {
  metadata: {
    resourceVersion?: string;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
    managedFields?: { manager?: string }[];
  };
  spec: { secretName: string; dnsNames: string[]; usages: string[]; issuerRef: Record<string, string> };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

describe(`MySQLCluster certificates from a cert-manager issuer (real API server, cert-manager ${CERT_MANAGER_VERSION})`, function () {
  this.timeout(120_000);
  const controlPlane = useSharedControlPlane();
  let build: CertManagerBuild;
  let client: KubeClient;
  let ns: string;
  let controller: Controller | undefined;
  let certManager: RunningCertManager | undefined;
  let resources: ResourceHelpers;
  let logDir: string;

  before(async function () {
    this.timeout(40 * 60_000);
    build = certManagerBuild();
    client = createKubeClient({ kubeconfigPath: controlPlane().kubeconfigPath, fieldManager: 'recon8s-tests' });
    ns = await freshNamespace('cert-manager');
    resources = resourceHelpers(controlPlane().kubeConfig(), ns);
    logDir = mkdtempSync(join(tmpdir(), 'recon8s-cert-manager-'));
    controller = await startTestController(controlPlane(), { namespaces: [ns], resyncPeriodMs: 2_000 });
  });
  after(async function () {
    this.timeout(60_000);
    await certManager?.stop();
    await controller?.stop();
    // The shared control plane as it was found: other files see no cert-manager.
    if (client && build) await removeCertManagerCrds(client, build.crdFiles);
    client?.close();
    if (logDir) rmSync(logDir, { recursive: true, force: true });
  });

  const certificatePath = (name: string) => `/apis/cert-manager.io/v1/namespaces/${ns}/certificates/${name}`;
  const certificate = (name: string) => getObject<Certificate>(client, certificatePath(name));
  const secret = (name: string) => getObject<V1Secret>(client, `/api/v1/namespaces/${ns}/secrets/${name}`);
  const statefulSet = (name: string) =>
    getObject<V1StatefulSet>(client, `/apis/apps/v1/namespaces/${ns}/statefulsets/${name}`);
  const pem = (s: V1Secret | undefined, key: string): string =>
    Buffer.from(s?.data?.[key] ?? '', 'base64').toString('utf8');
  const degraded = async (name: string) => conditionOf(await resources.get('mysqlclusters', name), 'Degraded');
  const liveCr = (name: string) =>
    client.requestJson<LiveCustomResource>({
      path: `/apis/recon8s.dev/v1alpha1/namespaces/${ns}/mysqlclusters/${name}`,
    });
  const certManagerLog = (): string => {
    try {
      return readFileSync(certManager?.logPath ?? '', 'utf8')
        .split('\n')
        .slice(-30)
        .join('\n');
    } catch {
      return '(cert-manager not running)';
    }
  };
  const apply = (o: Record<string, unknown>) =>
    client.requestJson({
      method: HttpMethod.PATCH,
      path: `/apis/cert-manager.io/v1/namespaces/${ns}/${String(o.kind).toLowerCase()}s/${(o.metadata as { name: string }).name}`,
      query: { fieldManager: 'recon8s-tests', force: true },
      body: JSON.stringify(o),
      headers: { 'Content-Type': PatchStrategy.ServerSideApply },
    });

  it('without the cert-manager CRDs: Degraded CertManagerMissing, the StatefulSet held back, the controller running on', async () => {
    assert.equal(
      await getObject(client, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/certificates.cert-manager.io'),
      undefined,
      'the cert-manager CRDs are already installed in this control plane',
    );
    await resources.create('mysqlclusters', 'MySQLCluster', 'db', {
      replicas: 1,
      tls: { issuerRef: { name: 'shop-ca' } },
    });
    await eventually(
      async () => {
        const d = await degraded('db');
        assert.deepEqual([d?.status, d?.reason], ['True', 'CertManagerMissing']);
        assert.match(d?.message ?? '', /serves no certificates\.cert-manager\.io: install cert-manager/);
      },
      { description: 'Degraded CertManagerMissing' },
    );
    assert.equal(await statefulSet('db'), undefined, 'a StatefulSet whose pods would mount a Secret that cannot come');
    assert.ok(await getObject(client, `/api/v1/namespaces/${ns}/services/db-primary`), 'the rest is applied');
  });

  it('once the CRDs are installed: the Certificate, and CertificatePending until cert-manager issues it', async function () {
    this.timeout(120_000);
    await installCertManagerCrds(client, build.crdFiles);
    const cert = await eventually(
      async () => {
        const c = await certificate('db-tls');
        assert.ok(c, 'no Certificate db-tls yet');
        const d = await degraded('db');
        assert.deepEqual([d?.status, d?.reason], ['True', 'CertificatePending']);
        assert.match(
          d?.message ?? '',
          new RegExp(
            `Certificate ${ns}/db-tls has not been issued into Secret db-tls yet: cert-manager has not reported on it`,
          ),
        );
        return c;
      },
      { timeoutMs: 60_000, description: 'the Certificate and CertificatePending' },
    );
    assert.deepEqual(cert.spec.issuerRef, { name: 'shop-ca', kind: 'Issuer', group: 'cert-manager.io' });
    assert.equal(cert.spec.secretName, 'db-tls');
    assert.deepEqual(cert.spec.usages, ['digital signature', 'key encipherment', 'server auth', 'client auth']);
    for (const n of [
      'db-0.db-headless',
      `db-0.db-headless.${ns}.svc.cluster.local`,
      'db-primary',
      `db-replicas.${ns}.svc`,
    ])
      assert.ok(cert.spec.dnsNames.includes(n), n);
    assert.deepEqual(
      cert.metadata.ownerReferences?.map((r) => `${r.kind}/${r.name}/${r.controller}`),
      ['MySQLCluster/db/true'],
    );
    assert.equal(await statefulSet('db'), undefined);
    // A steady cluster writes nothing: ensureTls again leaves the Certificate as it is.
    await ensureTls(client, await liveCr('db'), new Date());
    assert.equal((await certificate('db-tls'))?.metadata.resourceVersion, cert.metadata.resourceVersion);
  });

  it("with cert-manager running and no issuer yet: CertificatePending quotes cert-manager's Ready condition", async function () {
    this.timeout(120_000);
    certManager = startCertManager(build.binary, controlPlane().kubeconfigPath, join(logDir, 'cert-manager.log'));
    await eventually(
      async () => {
        const d = await degraded('db');
        assert.deepEqual([d?.status, d?.reason], ['True', 'CertificatePending']);
        assert.match(d?.message ?? '', /cert-manager says Ready=False \(\w+\)/);
      },
      { timeoutMs: 90_000, description: "CertificatePending with cert-manager's word", diagnose: certManagerLog },
    );
    assert.equal(await statefulSet('db'), undefined);
  });

  it("issued by a CA Issuer: the members' Secret holds that CA and a certificate it signed for every name, and the StatefulSet is applied", async function () {
    this.timeout(180_000);
    // A CA of the namespace, as cert-manager's documentation sets one up: self-signed root, then a CA Issuer.
    await apply({
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: 'selfsigned', namespace: ns },
      spec: { selfSigned: {} },
    });
    await apply({
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'shop-root', namespace: ns },
      spec: {
        isCA: true,
        commonName: 'shop root CA',
        secretName: 'shop-root',
        privateKey: { algorithm: 'ECDSA', size: 256 },
        issuerRef: { name: 'selfsigned', kind: 'Issuer', group: 'cert-manager.io' },
      },
    });
    await apply({
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: 'shop-ca', namespace: ns },
      spec: { ca: { secretName: 'shop-root' } },
    });

    await eventually(
      async () => {
        const cr = await resources.get('mysqlclusters', 'db');
        assert.notEqual(
          conditionOf(cr, 'Degraded')?.reason,
          'CertificatePending',
          conditionOf(cr, 'Degraded')?.message,
        );
        assert.equal((cr.status as { tlsSecretName?: string } | undefined)?.tlsSecretName, 'db-tls');
        assert.ok(await statefulSet('db'), 'no StatefulSet yet');
      },
      { timeoutMs: 150_000, description: 'the Secret issued and the StatefulSet applied', diagnose: certManagerLog },
    );
    const root = await secret('shop-root');
    const tls = await secret('db-tls');
    assert.deepEqual(Object.keys(tls?.data ?? {}).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    assert.equal(pem(tls, 'ca.crt').trim(), pem(root, 'tls.crt').trim(), "ca.crt is the CA Issuer's CA");
    const ca = new X509Certificate(pem(tls, 'ca.crt'));
    const member = new X509Certificate(pem(tls, 'tls.crt'));
    assert.ok(member.checkIssued(ca) && member.verify(ca.publicKey), 'the member certificate verifies with ca.crt');
    for (const host of ['db-0.db-headless', `db-primary.${ns}.svc`, `db-replicas.${ns}.svc.cluster.local`])
      assert.equal(member.checkHost(host), host);
    // Server and client auth: members are clients of each other (replication, clone).
    assert.deepEqual([...(member.keyUsage ?? [])].sort(), ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    // What the controller verifies members with, and what the members reload to.
    const state = await ensureTls(client, await liveCr('db'), new Date());
    assert.equal(state.state, 'ready');
    assert.equal(state.requested, undefined, 'the Certificate as cert-manager left it was written again');
    assert.equal('caPem' in state ? state.caPem : '', pem(tls, 'ca.crt'));
    assert.equal('notAfter' in state ? state.notAfter : '', new Date(member.validTo).toISOString());
    const sts = await statefulSet('db');
    assert.ok(
      JSON.stringify(sts?.spec?.template.spec?.volumes ?? []).includes('"secretName":"db-tls"'),
      'the members mount the Secret cert-manager writes',
    );
  });

  it('issued and steady: reconciles (a resync every 2 s) send no request, the Certificate and the Secret read from watches', async function () {
    this.timeout(60_000);
    const metrics = (controller as Controller).metrics;
    const sum = async (c: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> =>
      (await c.get()).values.reduce((n, v) => n + v.value, 0);
    // Settled first: cert-manager's last writes (its status, the CertificateRequest it cleans up) have been seen.
    let requests = -1;
    await eventually(
      async () => {
        const [r0, c0] = [await sum(metrics.restClientRequests), await sum(metrics.reconcileTotal)];
        await eventually(
          async () => assert.ok((await sum(metrics.reconcileTotal)) >= c0 + 3, 'fewer than 3 reconciles'),
          {
            timeoutMs: 20_000,
            description: 'three reconciles',
          },
        );
        requests = (await sum(metrics.restClientRequests)) - r0;
        assert.equal(requests, 0, `${requests} requests over three reconciles of a steady cluster`);
      },
      { timeoutMs: 45_000, description: 'three reconciles without a request' },
    );
  });

  it('renewed by cert-manager: a new certificate from the same CA in the same Secret, read as a new expiry', async function () {
    this.timeout(120_000);
    const before = await ensureTls(client, await liveCr('db'), new Date());
    const beforeCert = pem(await secret('db-tls'), 'tls.crt');
    // Expiry is to the second: a renewal in the second of the issue would expire at the same time (in
    // life it comes months later). Wait for the next second.
    const issuedAt = Date.parse(new X509Certificate(beforeCert).validFrom);
    await eventually(
      () => assert.ok(Date.now() >= issuedAt + 1_000, 'still the second the certificate was issued in'),
      {
        description: 'the second after the issue',
      },
    );
    const c = await certificate('db-tls');
    // What `cmctl renew` does: the Issuing condition, set by hand.
    await client.request({
      method: HttpMethod.PATCH,
      path: `${certificatePath('db-tls')}/status`,
      body: JSON.stringify({
        status: {
          conditions: [
            ...(c?.status?.conditions ?? []).filter((x) => x.type !== 'Issuing'),
            {
              type: 'Issuing',
              status: 'True',
              reason: 'ManuallyTriggered',
              message: 'renewal asked by the test',
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
    const after = await eventually(
      async () => {
        const s = await secret('db-tls');
        assert.notEqual(pem(s, 'tls.crt'), beforeCert, 'not renewed yet');
        const state = await ensureTls(client, await liveCr('db'), new Date());
        assert.equal(state.state, 'ready');
        assert.notEqual('notAfter' in state ? state.notAfter : '', 'notAfter' in before ? before.notAfter : '');
        return state;
      },
      { timeoutMs: 90_000, description: 'cert-manager to renew the certificate', diagnose: certManagerLog },
    );
    assert.equal(
      'caPem' in after ? after.caPem : '',
      'caPem' in before ? before.caPem : '',
      'the same CA: clients are unaffected',
    );
  });

  it('reissued for a member added by scaling up; until then pending, never a crash', async function () {
    this.timeout(120_000);
    await resources.patchSpec('mysqlclusters', 'db', { replicas: 2 });
    await eventually(
      async () => {
        const c = await certificate('db-tls');
        assert.ok(c?.spec.dnsNames.includes('db-1.db-headless'), 'the Certificate does not name db-1 yet');
        const member = new X509Certificate(pem(await secret('db-tls'), 'tls.crt'));
        assert.equal(member.checkHost('db-1.db-headless'), 'db-1.db-headless');
        const state = await ensureTls(client, await liveCr('db'), new Date());
        assert.equal(state.state, 'ready');
        assert.equal((await statefulSet('db'))?.spec?.replicas, 2);
      },
      {
        timeoutMs: 90_000,
        description: 'the certificate reissued with db-1 and the StatefulSet scaled',
        diagnose: certManagerLog,
      },
    );
  });

  it("never touches a Certificate of that name that is not the cluster's: CertificateForeign, held back", async function () {
    this.timeout(60_000);
    await apply({
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'other-tls', namespace: ns },
      spec: { secretName: 'someone-else', dnsNames: ['x.example'], issuerRef: { name: 'shop-ca' } },
    });
    const before = await certificate('other-tls');
    await resources.create('mysqlclusters', 'MySQLCluster', 'other', {
      replicas: 1,
      tls: { issuerRef: { name: 'shop-ca' } },
    });
    await eventually(
      async () => {
        const d = await degraded('other');
        assert.deepEqual([d?.status, d?.reason], ['True', 'CertificateForeign']);
        assert.match(d?.message ?? '', new RegExp(`Certificate ${ns}/other-tls exists and is not this cluster's`));
      },
      { description: 'CertificateForeign' },
    );
    // Its spec as its owner wrote it, and no field of it recon8s's (cert-manager writes its status meanwhile).
    const after = await certificate('other-tls');
    assert.deepEqual(after?.spec, before?.spec);
    assert.deepEqual(
      (after?.metadata.managedFields ?? []).map((f) => f.manager).filter((m) => m === 'recon8s'),
      [],
    );
    assert.equal(await statefulSet('other'), undefined);
  });
});
