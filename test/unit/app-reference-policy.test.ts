// What an App's pods may name of its namespace under the install's allow-lists
// (lib/controller/app/reference-policy.ts), judged on what render() really produces. The controller's
// handling of a refusal (condition, Event, nothing applied, no loop) is proven against a real API
// server: test/integration/app-reference-policy.test.ts.
import assert from 'node:assert/strict';
import type { AppResource } from '../../constructs/index.js';
import { allowListAllows, render } from '../../constructs/index.js';
import { podReferences, refusedReferences } from '../../lib/controller/app/reference-policy.js';
import type { AppReferencePolicy, CustomResource } from '../../lib/controller/kind-controller.js';

const app = (spec: Record<string, unknown>, name = 'web'): AppResource => ({
  apiVersion: 'recon8s.dev/v1alpha1',
  kind: 'App',
  metadata: { name, namespace: 'shop', uid: 'u-1', generation: 1 },
  spec: { image: 'nginx:1.27', ...spec } as AppResource['spec'],
});
const refused = (cr: AppResource, policy: AppReferencePolicy | undefined): string[] =>
  refusedReferences(cr as unknown as CustomResource, render(cr), policy);

/** Everything an App can name: a ServiceAccount, a Secret in env, an image pull Secret, a database binding. */
const EVERYTHING = app({
  serviceAccountName: 'deployer',
  env: [
    { name: 'PLAIN', value: 'x' },
    { name: 'STRIPE_KEY', valueFrom: { secretKeyRef: { name: 'stripe', key: 'key' } } },
    { name: 'FLAG', valueFrom: { configMapKeyRef: { name: 'flags', key: 'f' } } },
  ],
  imagePullSecrets: ['registry'],
  database: { cluster: 'db', name: 'shop' },
});

describe('what an App may name (the install allow-lists, --app-service-accounts and --app-secrets)', () => {
  it('finds every ServiceAccount and Secret the rendered pods name, in the App fields they came from', () => {
    assert.deepEqual(
      podReferences(render(EVERYTHING))
        .map((r) => `${r.kind} ${r.name} ← ${r.field}`)
        .sort(),
      [
        'Secret registry ← spec.imagePullSecrets[0]',
        'Secret stripe ← spec.env[STRIPE_KEY].valueFrom.secretKeyRef.name',
        'Secret web-db ← spec.env[DB_PASSWORD].valueFrom.secretKeyRef.name',
        'Secret web-db ← spec.env[DB_USER].valueFrom.secretKeyRef.name',
        "Secret web-db ← the pods' volume database-binding (secret)",
        'ServiceAccount deployer ← spec.serviceAccountName',
      ].sort(),
    );
  });

  it('finds references in every container, envFrom and projected volumes too (a pod template render() may grow)', () => {
    const refs = podReferences([
      {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: { name: 'job' },
        spec: {
          jobTemplate: {
            spec: {
              template: {
                spec: {
                  serviceAccount: 'legacy',
                  initContainers: [{ name: 'init', envFrom: [{ secretRef: { name: 'all-of-it' } }] }],
                  containers: [{ name: 'main' }],
                  volumes: [{ name: 'p', projected: { sources: [{ secret: { name: 'projected' } }] } }],
                },
              },
            },
          },
        },
      },
    ]);
    assert.deepEqual(
      refs.map((r) => `${r.kind} ${r.name} ← ${r.field}`),
      [
        'ServiceAccount legacy ← spec.serviceAccountName',
        'Secret all-of-it ← CronJob job: container init.envFrom[0].secretRef.name',
        "Secret projected ← the pods' volume p (projected secret)",
      ],
    );
  });

  it('allows everything without a policy, and with "*" (the default)', () => {
    assert.deepEqual(refused(EVERYTHING, undefined), []);
    assert.deepEqual(refused(EVERYTHING, {}), []);
    assert.deepEqual(refused(EVERYTHING, { serviceAccounts: ['*'], secrets: ['*'] }), []);
  });

  it('fails on a ServiceAccount outside the list, naming the field, the value and what is allowed', () => {
    assert.deepEqual(refused(EVERYTHING, { serviceAccounts: ['web', 'billing/*'] }), [
      'spec.serviceAccountName: ServiceAccount "deployer" is not allowed: this operator\'s --app-service-accounts says Apps may name only the ServiceAccounts web, billing/*',
    ]);
    assert.deepEqual(refused(EVERYTHING, { serviceAccounts: [] }), [
      'spec.serviceAccountName: ServiceAccount "deployer" is not allowed: this operator\'s --app-service-accounts says Apps run only as their namespace default ServiceAccount',
    ]);
    // No serviceAccountName: the namespace default, always allowed.
    assert.deepEqual(refused(app({}), { serviceAccounts: [] }), []);
  });

  it('fails on a Secret in env or as an image pull Secret outside the list; the App’s own binding Secret always passes', () => {
    assert.deepEqual(refused(EVERYTHING, { secrets: [] }), [
      'spec.imagePullSecrets[0]: Secret "registry" is not allowed: this operator\'s --app-secrets says Apps name no Secret but their own database binding',
      'spec.env[STRIPE_KEY].valueFrom.secretKeyRef.name: Secret "stripe" is not allowed: this operator\'s --app-secrets says Apps name no Secret but their own database binding',
    ]);
    assert.deepEqual(refused(EVERYTHING, { secrets: ['shop/stripe', 'registry'] }), []);
    assert.deepEqual(refused(EVERYTHING, { secrets: ['shop/*'] }), []);
    assert.deepEqual(
      refused(EVERYTHING, { secrets: ['billing/*', 'registry'] }).map((m) => m.split(':')[0]),
      ['spec.env[STRIPE_KEY].valueFrom.secretKeyRef.name'],
    );
  });

  it("fails on another App's binding Secret (web-db), or on its name without spec.database", () => {
    const other = app(
      { env: [{ name: 'STOLEN', valueFrom: { secretKeyRef: { name: 'web-db', key: 'password' } } }] },
      'intruder',
    );
    assert.match(
      refused(other, { secrets: [] })[0] ?? '',
      /^spec\.env\[STOLEN\]\.valueFrom\.secretKeyRef\.name: Secret "web-db"/,
    );
    const noBinding = app({ env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'web-db', key: 'password' } } }] });
    assert.equal(refused(noBinding, { secrets: [] }).length, 1);
  });

  it('matches entries by name, namespace/name, namespace/* and *', () => {
    const cases: [string[], string, string, boolean][] = [
      [['*'], 'shop', 'x', true],
      [['x'], 'billing', 'x', true],
      [['shop/x'], 'shop', 'x', true],
      [['shop/x'], 'billing', 'x', false],
      [['shop/*'], 'shop', 'anything', true],
      [['shop/*'], 'shopping', 'anything', false],
      [['x'], 'shop', 'xy', false],
      [[], 'shop', 'x', false],
    ];
    for (const [list, namespace, name, expected] of cases)
      assert.equal(allowListAllows(list, namespace, name), expected, `${list.join(',')} ∋ ${namespace}/${name}`);
  });
});
