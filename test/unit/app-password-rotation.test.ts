// The App's side of a password rotation (lib/controller/app/binding-rotation.ts): the facts it reads
// from the App, its Secret and the cluster's report of the account, whether every pod runs the new
// template, and what render() puts on that template. No I/O.
import assert from 'node:assert/strict';
import type { V1Secret } from '@kubernetes/client-node';
import type { MySQLAccountStatus } from '../../constructs/index.js';
import {
  PASSWORD_NEXT_KEY,
  PASSWORD_NEXT_REVISION_ANNOTATION,
  PASSWORD_REVISION_ANNOTATION,
  ROTATE_CREDENTIALS_ANNOTATION,
  render,
} from '../../constructs/index.js';
import {
  appRotationFacts,
  passwordRevision,
  rolledRevision,
  rotateAppPassword,
  rotationFactsOf,
} from '../../lib/controller/app/binding-rotation.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { KubeApiError } from '../../lib/kube/errors.js';
import type { BindingFacts } from '../../lib/controller/app/database-binding.js';
import { observeBinding } from '../../lib/controller/app/database-binding.js';
import type { CustomResource } from '../../lib/controller/kind-controller.js';
import { decideRotation } from '../../lib/mysql/password-rotation.js';

const app = (annotations: Record<string, string> = {}, status: Record<string, unknown> = {}): CustomResource => ({
  apiVersion: 'recon8s.dev/v1alpha1',
  kind: 'App',
  metadata: { name: 'web', namespace: 'shop', uid: 'u1', annotations },
  spec: { image: 'web:1', database: { cluster: 'db', name: 'shop' } },
  status: { credentialRotation: status },
});
const secret = (annotations: Record<string, string> = {}, next = false): V1Secret => ({
  metadata: { name: 'web-db', namespace: 'shop', annotations, resourceVersion: '7' },
  data: { password: 'b2xk', ...(next ? { [PASSWORD_NEXT_KEY]: 'bmV3' } : {}) },
});
const account = (o: Partial<MySQLAccountStatus> = {}): MySQLAccountStatus => ({
  app: 'web',
  user: 'r8s_web_x',
  ready: true,
  passwordRevision: '0',
  retainsPassword: false,
  ...o,
});

describe("App password rotation: the App's side", () => {
  it('a revision is a short hash of the token, the same each time, different per token', () => {
    assert.match(passwordRevision('T1'), /^[0-9a-f]{16}$/);
    assert.equal(passwordRevision('T1'), passwordRevision('T1'));
    assert.notEqual(passwordRevision('T1'), passwordRevision('T2'));
  });

  it('reads the request, the staged token and the Secret revision; hashes on the template stand for their token', () => {
    const facts = rotationFactsOf(
      app(
        { [ROTATE_CREDENTIALS_ANNOTATION]: 'T2', [PASSWORD_REVISION_ANNOTATION]: passwordRevision('T1') },
        { completed: 'T0', rolledRevision: passwordRevision('T1') },
      ),
      secret({ [PASSWORD_REVISION_ANNOTATION]: 'T1', [PASSWORD_NEXT_REVISION_ANNOTATION]: 'T2' }, true),
    );
    assert.deepEqual(facts, {
      requested: 'T2',
      completed: 'T0',
      secretRevision: 'T1',
      staged: 'T2',
      rollRevision: 'T1',
      rolledRevision: 'T1',
    });
  });

  it('a next-revision annotation without password-next stages nothing; password-next without one is the asked rotation', () => {
    assert.equal(rotationFactsOf(app(), secret({ [PASSWORD_NEXT_REVISION_ANNOTATION]: 'T1' })).staged, undefined);
    assert.equal(rotationFactsOf(app({ [ROTATE_CREDENTIALS_ANNOTATION]: 'T3' }), secret({}, true)).staged, 'T3');
  });

  it('sees the account as the cluster reports it, in revisions of the Secret it sees now (a report from before its own write included)', () => {
    const staged = secret({ [PASSWORD_NEXT_REVISION_ANNOTATION]: 'T1' }, true);
    const cr = app({ [ROTATE_CREDENTIALS_ANNOTATION]: 'T1' });
    const holds = (a: MySQLAccountStatus | undefined, s: V1Secret = staged) => appRotationFacts(cr, s, a).account;
    assert.deepEqual(holds(undefined), { holds: 'unknown', retains: false });
    assert.deepEqual(holds(account({ ready: false })), { holds: 'unknown', retains: false });
    assert.deepEqual(holds(account()), { holds: 'current', retains: false });
    assert.deepEqual(holds(account({ passwordRevision: 'T1', retainsPassword: true })), {
      holds: 'next',
      retains: true,
    });
    assert.deepEqual(holds(account({ passwordRevision: undefined })), { holds: 'other', retains: false });
    // Switched: the report "holds T1" is now the Secret's current password.
    const switched = secret({ [PASSWORD_REVISION_ANNOTATION]: 'T1' });
    assert.deepEqual(holds(account({ passwordRevision: 'T1', retainsPassword: true }), switched), {
      holds: 'current',
      retains: true,
    });
    // And a report from before the retain ("holds 0") against the switched Secret is not "current".
    assert.deepEqual(holds(account(), switched), { holds: 'other', retains: false });
  });

  it('drives the App through its steps as the cluster reports: stage, wait, switch, roll, wait, complete', () => {
    const T = { [ROTATE_CREDENTIALS_ANNOTATION]: 'T1' };
    const step = (cr: CustomResource, s: V1Secret, a: MySQLAccountStatus) => decideRotation(appRotationFacts(cr, s, a));
    assert.equal(step(app(T), secret(), account()).kind, 'stage');
    const staged = secret({ [PASSWORD_NEXT_REVISION_ANNOTATION]: 'T1' }, true);
    assert.equal(step(app(T), staged, account()).kind, 'retain'); // the cluster's
    assert.equal(step(app(T), staged, account({ passwordRevision: 'T1', retainsPassword: true })).kind, 'switch');
    const switched = secret({ [PASSWORD_REVISION_ANNOTATION]: 'T1' });
    const both = account({ passwordRevision: 'T1', retainsPassword: true });
    assert.equal(step(app(T), switched, both).kind, 'roll');
    const rolling = app({ ...T, [PASSWORD_REVISION_ANNOTATION]: passwordRevision('T1') });
    assert.equal(step(rolling, switched, both).kind, 'awaitPods');
    const rolled = app(
      { ...T, [PASSWORD_REVISION_ANNOTATION]: passwordRevision('T1') },
      { rolledRevision: passwordRevision('T1') },
    );
    assert.equal(step(rolled, switched, both).kind, 'discard'); // the cluster's
    assert.equal(step(rolled, switched, account({ passwordRevision: 'T1' })).kind, 'complete');
  });

  describe('its writes (a fake client records them)', () => {
    const recording = () => {
      const sent: { method: string; path: string; body: Record<string, unknown> }[] = [];
      const client = {
        request: (r: { method: string; path: string; body: string }) => {
          sent.push({ method: r.method, path: r.path, body: JSON.parse(r.body) as Record<string, unknown> });
          return Promise.resolve('');
        },
      } as unknown as KubeClient;
      return { sent, client };
    };
    const T = { [ROTATE_CREDENTIALS_ANNOTATION]: 'T1' };
    const secretWords = (o: unknown) => JSON.stringify(o).match(/b2xk|bmV3|"old"|"new"/g);

    it('stage: a generated password-next and its token, compare-and-swap on the Secret', async () => {
      const { sent, client } = recording();
      const r = await rotateAppPassword(client, app(T), secret(), account());
      assert.equal(r.step.kind, 'stage');
      assert.equal(sent.length, 1);
      assert.equal(sent[0]?.path, '/api/v1/namespaces/shop/secrets/web-db');
      const body = sent[0]?.body as { metadata: Record<string, unknown>; stringData: Record<string, string> };
      assert.equal(body.metadata.resourceVersion, '7');
      assert.deepEqual(body.metadata.annotations, { [PASSWORD_NEXT_REVISION_ANNOTATION]: 'T1' });
      assert.match(body.stringData[PASSWORD_NEXT_KEY] ?? '', /^[A-Za-z0-9_-]{32}$/);
      assert.deepEqual(r.status, { requested: 'T1', phase: 'Staging', message: r.status.message });
      assert.deepEqual(
        r.events.map((e) => e.reason),
        ['PasswordRotationStaged'],
      );
      assert.equal(secretWords([r.status, r.events]), null);
    });

    it('a Secret changed since it was read (409) is not overwritten: no error, no Event, judged again next pass', async () => {
      const client = {
        request: () => Promise.reject(new KubeApiError(409, 'HTTP 409: conflict', '{}', {})),
      } as unknown as KubeClient;
      const r = await rotateAppPassword(client, app(T), secret(), account());
      assert.equal(r.step.kind, 'stage');
      assert.deepEqual(r.events, []);
    });

    it('switch: password-next copied into password as stored (never decoded), its token recorded, password-next dropped', async () => {
      const { sent, client } = recording();
      const staged = secret({ [PASSWORD_NEXT_REVISION_ANNOTATION]: 'T1' }, true);
      const r = await rotateAppPassword(
        client,
        app(T),
        staged,
        account({ passwordRevision: 'T1', retainsPassword: true }),
      );
      assert.equal(r.step.kind, 'switch');
      assert.deepEqual(sent[0]?.body, {
        metadata: {
          annotations: { [PASSWORD_REVISION_ANNOTATION]: 'T1', [PASSWORD_NEXT_REVISION_ANNOTATION]: null },
          resourceVersion: '7',
        },
        data: { password: 'bmV3', [PASSWORD_NEXT_KEY]: null },
      });
      assert.equal(secretWords([r.status, r.events]), null);
    });

    it("roll: the App's password revision set (a hash of the token); complete: recorded in status, nothing written", async () => {
      const switched = secret({ [PASSWORD_REVISION_ANNOTATION]: 'T1' });
      const roll = recording();
      const rolling = await rotateAppPassword(
        roll.client,
        app(T),
        switched,
        account({ passwordRevision: 'T1', retainsPassword: true }),
      );
      assert.equal(rolling.step.kind, 'roll');
      assert.equal(roll.sent[0]?.path, '/apis/recon8s.dev/v1alpha1/namespaces/shop/apps/web');
      assert.deepEqual(roll.sent[0]?.body, {
        metadata: { annotations: { [PASSWORD_REVISION_ANNOTATION]: passwordRevision('T1') } },
      });
      const done = recording();
      const rolled = app(
        { ...T, [PASSWORD_REVISION_ANNOTATION]: passwordRevision('T1') },
        { rolledRevision: passwordRevision('T1') },
      );
      const r = await rotateAppPassword(done.client, rolled, switched, account({ passwordRevision: 'T1' }));
      assert.equal(r.step.kind, 'complete');
      assert.deepEqual(done.sent, []);
      assert.deepEqual(r.status, { requested: 'T1', completed: 'T1' });
      assert.deepEqual(
        r.events.map((e) => e.reason),
        ['PasswordRotationCompleted'],
      );
    });

    it("the cluster's steps and waits write nothing here, and say the phase once", async () => {
      const { sent, client } = recording();
      const staged = secret({ [PASSWORD_NEXT_REVISION_ANNOTATION]: 'T1' }, true);
      const r = await rotateAppPassword(client, app(T), staged, account());
      assert.equal(r.step.kind, 'retain');
      assert.deepEqual(sent, []);
      assert.deepEqual(
        r.events.map((e) => e.reason),
        ['PasswordRotationRetaining'],
      );
      const again = await rotateAppPassword(client, app(T, { phase: 'Retaining' }), staged, account());
      assert.deepEqual(again.events, []);
    });
  });

  describe('rolledRevision: every pod runs the new template', () => {
    const rev = passwordRevision('T1');
    const cr = app({ [PASSWORD_REVISION_ANNOTATION]: rev });
    const deployment = (o: { template?: string; generation?: number; observed?: number; replicas?: number } = {}) => ({
      metadata: { generation: o.generation ?? 2 },
      spec: { template: { metadata: { annotations: { [PASSWORD_REVISION_ANNOTATION]: o.template ?? rev } } } },
      status: { observedGeneration: o.observed ?? 2, replicas: o.replicas ?? 2, updatedReplicas: o.replicas ?? 2 },
    });
    const pod = (r?: string): { metadata: { annotations: Record<string, string> } } => ({
      metadata: { annotations: r ? { [PASSWORD_REVISION_ANNOTATION]: r } : {} },
    });

    it('when the template asks for it, the Deployment has seen it, and every pod carries it', () => {
      assert.equal(rolledRevision(cr, deployment(), [pod(rev), pod(rev)]), rev);
    });

    it('not while an old pod is there, terminating ones included', () => {
      assert.equal(rolledRevision(cr, deployment(), [pod(rev), pod(rev), pod()]), undefined);
      assert.equal(rolledRevision(cr, deployment(), [pod(rev), pod('0123456789abcdef')]), undefined);
    });

    it('not before the Deployment has the template or has seen it, nor from a pod list shorter than its count', () => {
      assert.equal(rolledRevision(cr, deployment({ template: 'x' }), [pod(rev), pod(rev)]), undefined);
      assert.equal(rolledRevision(cr, deployment({ observed: 1 }), [pod(rev), pod(rev)]), undefined);
      assert.equal(rolledRevision(cr, deployment(), []), undefined);
      assert.equal(rolledRevision(cr, undefined, [pod(rev)]), undefined);
      assert.equal(rolledRevision(app(), deployment(), [pod(rev), pod(rev)]), undefined);
    });

    it('a Deployment scaled to zero has nothing to wait for', () => {
      assert.equal(rolledRevision(cr, deployment({ replicas: 0 }), []), rev);
    });
  });

  it('status.credentialRotation is said once a rotation was asked for, never as an empty object', () => {
    const facts = (rotation?: BindingFacts['rotation']): BindingFacts => ({
      secretName: 'web-db',
      ready: { status: 'True', reason: 'AccountReady', message: '' },
      ...(rotation !== undefined ? { rotation } : {}),
    });
    assert.deepEqual(observeBinding(facts()).fields, { binding: { name: 'web-db' } });
    assert.deepEqual(observeBinding(facts({})).fields, { binding: { name: 'web-db' } });
    assert.deepEqual(observeBinding(facts({ requested: 'T1', phase: 'Staging' })).fields, {
      binding: { name: 'web-db' },
      credentialRotation: { requested: 'T1', phase: 'Staging' },
    });
  });

  describe('render', () => {
    const podAnnotations = (annotations?: Record<string, string>) => {
      const objects = render({
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'web', namespace: 'shop', ...(annotations ? { annotations } : {}) },
        spec: { image: 'web:1', database: { cluster: 'db', name: 'shop' } },
      });
      const d = objects.find((o) => o.kind === 'Deployment') as
        { spec: { template: { metadata: { annotations?: Record<string, string> } } } } | undefined;
      return d?.spec.template.metadata.annotations;
    };

    it("copies the App's password revision onto the pod template (so the pods roll), and nothing else of its annotations", () => {
      assert.deepEqual(podAnnotations({ [PASSWORD_REVISION_ANNOTATION]: 'abc', other: 'x' }), {
        [PASSWORD_REVISION_ANNOTATION]: 'abc',
      });
      assert.equal(podAnnotations(), undefined);
      assert.equal(podAnnotations({ [ROTATE_CREDENTIALS_ANNOTATION]: 'T1' }), undefined);
    });
  });
});
