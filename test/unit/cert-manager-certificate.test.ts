// spec.tls.issuerRef: the cert-manager Certificate the controller asks for (certificateFor), and what it
// makes of the Secret cert-manager writes (issuedTls): pending, issued, renewed, and every way an issued
// Secret can be unusable (no ca.crt, another CA, a key that does not match, a name missing).
import assert from 'node:assert/strict';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import type { CertificateAndKey } from '../../lib/mysql/certificates.js';
import { memberDnsNames } from '../../lib/mysql/certificates.js';
import type { IssuedSecret, LiveCertificate } from '../../lib/mysql/cert-manager.js';
import { certificateFor, certificateSpecMatches, issuedTls } from '../../lib/mysql/cert-manager.js';

const DAY = 86_400_000;
const T0 = new Date('2026-11-25T12:00:00Z');
const NAMES = memberDnsNames({
  namespace: 'shop',
  members: ['db-0.db-headless', 'db-1.db-headless', 'db-2.db-headless'],
  services: ['db-primary', 'db-replicas'],
});
const LABELS = { 'app.kubernetes.io/managed-by': 'recon8s', 'app.kubernetes.io/instance': 'db' };

describe('cert-manager issuer (spec.tls.issuerRef)', function () {
  this.timeout(30_000);

  describe('certificateFor', () => {
    const owner = { apiVersion: 'recon8s.dev/v1alpha1', kind: 'MySQLCluster', name: 'db', uid: 'u1', controller: true };
    const cert = certificateFor({
      cluster: 'db',
      namespace: 'shop',
      secretName: 'db-tls',
      issuerRef: { name: 'shop-ca' },
      dnsNames: NAMES,
      labels: LABELS,
      ownerReference: owner,
    });

    it('is a cert-manager.io/v1 Certificate named after the TLS Secret, controlled by the cluster, labelled as recon8s children are', () => {
      assert.equal(cert.apiVersion, 'cert-manager.io/v1');
      assert.equal(cert.kind, 'Certificate');
      assert.deepEqual(cert.metadata, { name: 'db-tls', namespace: 'shop', labels: LABELS, ownerReferences: [owner] });
    });

    it('asks for the same certificate the controller issues itself: every name, server and client auth, a year, RSA 2048 PKCS#1', () => {
      assert.deepEqual(cert.spec, {
        secretName: 'db-tls',
        commonName: 'db.shop',
        dnsNames: NAMES,
        duration: '8760h',
        usages: ['digital signature', 'key encipherment', 'server auth', 'client auth'],
        privateKey: { algorithm: 'RSA', size: 2048, encoding: 'PKCS1', rotationPolicy: 'Always' },
        issuerRef: { name: 'shop-ca', kind: 'Issuer', group: 'cert-manager.io' },
      });
    });

    it('takes the kind and group named (a ClusterIssuer, an external issuer)', () => {
      const c = certificateFor({
        cluster: 'db',
        namespace: 'shop',
        secretName: 'db-tls',
        issuerRef: { name: 'corp', kind: 'ClusterIssuer', group: 'awspca.cert-manager.io' },
        dnsNames: NAMES,
        labels: LABELS,
      });
      assert.deepEqual(c.spec.issuerRef, { name: 'corp', kind: 'ClusterIssuer', group: 'awspca.cert-manager.io' });
      assert.equal(c.metadata.ownerReferences, undefined);
    });

    it('leaves the common name out when it would pass 64 characters (the DNS names are what clients check)', () => {
      const c = certificateFor({
        cluster: 'a'.repeat(40),
        namespace: 'b'.repeat(30),
        secretName: 's',
        issuerRef: { name: 'i' },
        dnsNames: NAMES,
        labels: LABELS,
      });
      assert.equal(c.spec.commonName, undefined);
    });

    it('is the same object for the same input (no clock, no randomness)', () => {
      const again = certificateFor({
        cluster: 'db',
        namespace: 'shop',
        secretName: 'db-tls',
        issuerRef: { name: 'shop-ca' },
        dnsNames: NAMES,
        labels: LABELS,
        ownerReference: owner,
      });
      assert.equal(JSON.stringify(again), JSON.stringify(cert));
    });

    describe('certificateSpecMatches (a steady cluster writes nothing)', () => {
      it('matches a live spec that holds every field set, whatever else cert-manager or others added', () => {
        assert.ok(
          certificateSpecMatches(cert.spec, { ...structuredClone(cert.spec), revisionHistoryLimit: 1 } as Record<
            string,
            unknown
          >),
        );
      });
      it("matches whatever the order of an object's keys (the API server returns them sorted)", () => {
        const live = JSON.parse(
          JSON.stringify(cert.spec, (_k, v: unknown) =>
            v && typeof v === 'object' && !Array.isArray(v)
              ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
              : v,
          ),
        ) as Record<string, unknown>;
        assert.notEqual(JSON.stringify(live.issuerRef), JSON.stringify(cert.spec.issuerRef));
        assert.ok(certificateSpecMatches(cert.spec, live));
      });
      it('fails to match without a live spec', () => {
        assert.equal(certificateSpecMatches(cert.spec, undefined), false);
      });
      it('fails to match when a member was added (a new DNS name)', () => {
        const more = memberDnsNames({
          namespace: 'shop',
          members: ['db-0.db-headless', 'db-1.db-headless', 'db-2.db-headless', 'db-3.db-headless'],
          services: ['db-primary', 'db-replicas'],
        });
        assert.equal(
          certificateSpecMatches(
            { ...cert.spec, dnsNames: more },
            structuredClone(cert.spec) as unknown as Record<string, unknown>,
          ),
          false,
        );
      });
      it('fails to match when the issuer changed', () => {
        const live = structuredClone(cert.spec) as unknown as Record<string, unknown>;
        live.issuerRef = { name: 'other', kind: 'Issuer', group: 'cert-manager.io' };
        assert.equal(certificateSpecMatches(cert.spec, live), false);
      });
    });
  });

  describe('issuedTls', () => {
    let ca: CertificateAndKey;
    let other: CertificateAndKey;
    let issued: IssuedSecret;
    before(() => {
      ca = issueCa('shop issuer CA', T0);
      other = issueCa('another CA', T0);
      issued = issueServerCertificate(ca, 'db.shop', NAMES, T0);
    });
    const decide = (secret: IssuedSecret | undefined, certificate?: LiveCertificate, dnsNames = NAMES) =>
      issuedTls({
        certificateName: 'shop/db-tls',
        secretName: 'db-tls',
        dnsNames,
        ...(secret ? { secret } : {}),
        ...(certificate ? { certificate } : {}),
      });

    describe('pending', () => {
      it('no Secret and no Certificate yet', () => {
        const d = decide(undefined);
        assert.equal(d.state, 'pending');
        assert.match(
          'message' in d ? d.message : '',
          /Certificate shop\/db-tls has not been issued into Secret db-tls yet: it does not exist yet/,
        );
      });

      it("no Secret: cert-manager's own Ready condition, reason and message, is quoted", () => {
        const d = decide(undefined, {
          status: {
            conditions: [
              { type: 'Issuing', status: 'True', reason: 'DoesNotExist' },
              {
                type: 'Ready',
                status: 'False',
                reason: 'DoesNotExist',
                message: 'Issuing certificate as Secret does not exist',
              },
            ],
          },
        });
        assert.deepEqual(d, {
          state: 'pending',
          message:
            'Certificate shop/db-tls has not been issued into Secret db-tls yet: cert-manager says Ready=False (DoesNotExist): Issuing certificate as Secret does not exist',
        });
      });

      it('a Certificate cert-manager has not reported on: is cert-manager running?', () => {
        const d = decide(undefined, { spec: {} });
        assert.match(
          'message' in d ? d.message : '',
          /cert-manager has not reported on it \(is cert-manager running\?\)/,
        );
      });

      it('a Secret without tls.crt or tls.key yet', () => {
        assert.equal(decide({ ...issued, certPem: '' }).state, 'pending');
        assert.equal(decide({ ...issued, keyPem: '' }).state, 'pending');
      });

      it('a certificate without a member just added (cert-manager has not reissued it yet), naming the names', () => {
        const more = [...NAMES, 'db-3.db-headless'];
        const d = decide(
          issued,
          { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Issuing' }] } },
          more,
        );
        assert.deepEqual(d, {
          state: 'pending',
          message:
            'Certificate shop/db-tls has not been reissued with db-3.db-headless yet: cert-manager says Ready=False (Issuing)',
        });
      });
    });

    describe('issued', () => {
      it('ready: its ca.crt and when the certificate expires (what members are made to reload to)', () => {
        const d = decide(issued, { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready' }] } });
        assert.equal(d.state, 'ready');
        assert.equal('caPem' in d ? d.caPem : '', ca.certPem);
        assert.equal(
          'notAfter' in d ? Date.parse(d.notAfter) : 0,
          Date.parse(new Date(T0.getTime() + 365 * DAY).toISOString()),
        );
      });

      it('ready whatever cert-manager says of the Certificate meanwhile (a failing renewal leaves a valid Secret)', () => {
        const d = decide(issued, { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Failed' }] } });
        assert.equal(d.state, 'ready');
      });

      it('ready only with the ca.crt that signed tls.crt (the chain tls.crt carries is followed to it)', () => {
        // The intermediate: a CA certificate the root signs (issueServerCertificate is not a CA: build one by hand).
        const intermediate = issueCa('shop intermediate', T0);
        const leaf = issueServerCertificate(intermediate, 'db.shop', NAMES, T0);
        // Without the intermediate's own certificate signed by the root the chain does not lead to ca.crt.
        assert.equal(decide({ ...leaf, caPem: ca.certPem }).state, 'invalid');
        // The intermediate as its own root works.
        assert.equal(decide({ ...leaf, caPem: intermediate.certPem }).state, 'ready');
      });
    });

    describe('renewed', () => {
      it('a renewal (new key, new validity, same CA) is ready with the new expiry: the members reload it', () => {
        const later = new Date(T0.getTime() + 250 * DAY);
        const renewed = issueServerCertificate(ca, 'db.shop', NAMES, later);
        const before = decide(issued);
        const after = decide(renewed);
        assert.equal(after.state, 'ready');
        assert.notEqual('notAfter' in after ? after.notAfter : '', 'notAfter' in before ? before.notAfter : '');
        assert.equal('caPem' in after ? after.caPem : '', ca.certPem);
      });
    });

    describe('invalid', () => {
      it('fails when ca.crt is another CA than the one that signed tls.crt (wrong CA), naming both', () => {
        const d = decide({ ...issued, caPem: other.certPem });
        assert.equal(d.state, 'invalid');
        assert.match(
          'message' in d ? d.message : '',
          /its ca.crt \(CN=another CA\) did not sign tls.crt \(issued by CN=shop issuer CA\)/,
        );
      });

      it('fails when there is no ca.crt (an ACME issuer writes none)', () => {
        const d = decide({ ...issued, caPem: '' });
        assert.equal(d.state, 'invalid');
        assert.match('message' in d ? d.message : '', /has no ca.crt/);
      });

      it('fails when tls.key does not match tls.crt', () => {
        const d = decide({ ...issued, keyPem: issueServerCertificate(ca, 'x', NAMES, T0).keyPem });
        assert.deepEqual(d, { state: 'invalid', message: 'Secret db-tls: tls.key does not match tls.crt' });
      });

      it('fails when tls.crt does not parse', () => {
        assert.equal(decide({ ...issued, certPem: 'not a certificate' }).state, 'invalid');
      });

      it('never puts a key in a message', () => {
        for (const d of [decide({ ...issued, caPem: other.certPem }), decide({ ...issued, keyPem: other.keyPem })])
          assert.ok(!('message' in d && /PRIVATE KEY|BEGIN/.test(d.message)));
      });
    });
  });
});
