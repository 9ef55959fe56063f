// The members' certificates: what certificatePlan decides from the certificates found and the clock
// (every reason to issue, and the renewal boundary), and that what the issuer writes verifies as
// clients verify it (the chain, and each name replicas and applications use).
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import type { CertificateAndKey, ServerCertificate } from '../../lib/mysql/certificates.js';
import {
  SERVER_VALIDITY_DAYS,
  certificateNotAfter,
  certificatePlan,
  memberDnsNames,
} from '../../lib/mysql/certificates.js';

const DAY = 86_400_000;
const T0 = new Date('2026-11-25T12:00:00Z');
const NAMES = memberDnsNames({
  namespace: 'shop',
  members: ['db-0.db-headless', 'db-1.db-headless', 'db-2.db-headless'],
  services: ['db-primary', 'db-replicas'],
});

describe('member certificates', function () {
  this.timeout(30_000);
  let ca: CertificateAndKey;
  let server: ServerCertificate;
  before(() => {
    ca = issueCa('recon8s shop/db CA', T0);
    server = issueServerCertificate(ca, 'db.shop', NAMES, T0);
  });

  describe('memberDnsNames', () => {
    it('names each member and Service in every form a client uses, short to fully qualified, and no wildcard', () => {
      for (const host of ['db-1.db-headless', 'db-primary', 'db-replicas'])
        for (const name of [host, `${host}.shop`, `${host}.shop.svc`, `${host}.shop.svc.cluster.local`])
          assert.ok(NAMES.includes(name), name);
      assert.equal(NAMES.length, 5 * 4);
      assert.ok(NAMES.every((n) => !n.includes('*')));
      assert.ok(
        memberDnsNames({ namespace: 'n', members: ['a'], services: [], clusterDomain: 'corp.example' }).includes(
          'a.n.svc.corp.example',
        ),
      );
    });
  });

  describe('what the issuer writes', () => {
    it('a CA that signs certificates and nothing else, valid ten years', () => {
      const c = new X509Certificate(ca.certPem);
      assert.equal(c.ca, true);
      assert.equal(c.subject, 'CN=recon8s shop/db CA');
      assert.ok(Date.parse(c.validTo) - T0.getTime() >= 3649 * DAY);
      assert.ok(c.checkPrivateKey(createPrivateKey(ca.keyPem)));
    });

    it('a member certificate the CA verifies, for every member and Service name, not a CA itself, valid a year', () => {
      const c = new X509Certificate(server.certPem);
      const issuer = new X509Certificate(ca.certPem);
      assert.equal(c.ca, false);
      assert.ok(c.checkIssued(issuer) && c.verify(issuer.publicKey));
      for (const name of NAMES) assert.equal(c.checkHost(name), name, `the certificate does not verify as ${name}`);
      assert.equal(c.checkHost('db-3.db-headless'), undefined);
      assert.equal(c.checkHost('other-primary.shop.svc'), undefined);
      assert.equal(server.caPem, ca.certPem);
      assert.equal(Math.round((Date.parse(c.validTo) - T0.getTime()) / DAY), SERVER_VALIDITY_DAYS);
      // Backdated: a member whose clock runs a little behind accepts it at once.
      assert.ok(Date.parse(c.validFrom) < T0.getTime());
    });

    it('a new serial and key each time', () => {
      const again = issueServerCertificate(ca, 'db.shop', NAMES, T0);
      assert.notEqual(
        new X509Certificate(again.certPem).serialNumber,
        new X509Certificate(server.certPem).serialNumber,
      );
      assert.notEqual(again.keyPem, server.keyPem);
    });
  });

  describe('certificatePlan', () => {
    it('keeps a valid pair', () => {
      assert.deepEqual(certificatePlan({ ca, server }, NAMES, T0), { action: 'keep' });
    });

    it('issues everything when there is no CA, one that does not parse, one whose key is another, or one that expired', () => {
      const other = issueCa('other', T0);
      const cases: [Parameters<typeof certificatePlan>[0], RegExp][] = [
        [{}, /no CA yet/],
        [{ server }, /no CA yet/],
        [{ ca: { certPem: 'garbage', keyPem: ca.keyPem }, server }, /no CA yet/],
        [{ ca: { certPem: ca.certPem, keyPem: other.keyPem }, server }, /CA key does not match/],
      ];
      for (const [found, reason] of cases) {
        const plan = certificatePlan(found, NAMES, T0);
        assert.equal(plan.action, 'issueAll', JSON.stringify(plan));
        assert.match('reason' in plan ? plan.reason : '', reason);
      }
      const plan = certificatePlan({ ca, server }, NAMES, new Date(T0.getTime() + 3651 * DAY));
      assert.equal(plan.action, 'issueAll');
      assert.match('reason' in plan ? plan.reason : '', /the CA expired at 20\d\d-/);
    });

    it('issues the member certificate when it is missing, signed by another CA, holds another key, or lacks a name (a member scaled up)', () => {
      const other = issueCa('other', T0);
      const foreign = issueServerCertificate(other, 'db.shop', NAMES, T0);
      const cases: [Parameters<typeof certificatePlan>[0], readonly string[], RegExp][] = [
        [{ ca }, NAMES, /no member certificate yet/],
        [{ ca, server: { ...foreign, caPem: ca.certPem } }, NAMES, /not signed by the cluster CA/],
        [{ ca, server: { ...server, caPem: other.certPem } }, NAMES, /not signed by the cluster CA/],
        [{ ca, server: { ...server, keyPem: foreign.keyPem } }, NAMES, /key does not match/],
        [{ ca, server }, [...NAMES, 'db-3.db-headless'], /lacks db-3\.db-headless$/],
      ];
      for (const [found, names, reason] of cases) {
        const plan = certificatePlan(found, names, T0);
        assert.equal(plan.action, 'issueServer', JSON.stringify(plan));
        assert.match('reason' in plan ? plan.reason : '', reason);
      }
    });

    it('renews the member certificate once a third of its life is left, not a second before', () => {
      const c = new X509Certificate(server.certPem);
      const from = Date.parse(c.validFrom);
      const to = Date.parse(c.validTo);
      const renewAt = to - (to - from) / 3;
      assert.deepEqual(certificatePlan({ ca, server }, NAMES, new Date(renewAt - 1000)), { action: 'keep' });
      const plan = certificatePlan({ ca, server }, NAMES, new Date(renewAt));
      assert.equal(plan.action, 'issueServer');
      assert.match(
        'reason' in plan ? plan.reason : '',
        new RegExp(`expires at ${certificateNotAfter(server.certPem)}`),
      );
    });
  });
});
