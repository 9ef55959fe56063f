// A manager's Events (kind-controller.ts ManagedEvent) as the reconciler records them: one with a
// `once` key is one Event per resource and key, whatever its message says by the time it is seen again
// (a refused member certificate, seen at every look), and its name comes from the key, so that a
// controller that starts afresh is answered 409 rather than recording it again.
import assert from 'node:assert/strict';
import { createEventRecorder, recordManaged } from '../../lib/controller/events.js';
import type { EventSubject } from '../../lib/controller/events.js';
import { silentLogger } from '../../lib/observability/logger.js';

const cluster = (uid: string): EventSubject => ({
  apiVersion: 'recon8s.dev/v1alpha1',
  kind: 'MySQLCluster',
  metadata: { name: 'db', namespace: 'shop', uid },
});

describe("a manager's Events", () => {
  it('records one with a once key once per resource and key, named after the key', async () => {
    const posted: { metadata: { name: string }; reason: string; message: string }[] = [];
    const recorder = (): ReturnType<typeof createEventRecorder> =>
      createEventRecorder(
        {
          requestJson: <T>(o: { body?: string }): Promise<T> => {
            posted.push(JSON.parse(o.body ?? '{}') as (typeof posted)[number]);
            return Promise.resolve({} as T);
          },
        },
        silentLogger,
      );
    const event = (message: string, once = 'member-certificate/uid-db-2/certificate has expired') => ({
      type: 'Warning' as const,
      reason: 'MemberCertificateRejected',
      message,
      once,
    });
    const first = recorder();
    for (const message of ['pod db-2 (the primary) presented …', 'pod db-2 presented …', 'pod db-2 presented …'])
      recordManaged(first, cluster('u1'), [event(message)]);
    // Another key (another reason), and the same key on another cluster.
    recordManaged(first, cluster('u1'), [event('pod db-2 presented …', 'member-certificate/uid-db-2/other')]);
    recordManaged(first, cluster('u2'), [event('pod db-2 presented …')]);
    // A controller that starts afresh asks for the same Event: the same name (the API server refuses it).
    recordManaged(recorder(), cluster('u1'), [event('pod db-2 presented …')]);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      posted.map((e) => e.message),
      ['pod db-2 (the primary) presented …', 'pod db-2 presented …', 'pod db-2 presented …', 'pod db-2 presented …'],
    );
    const names = posted.map((e) => e.metadata.name);
    assert.equal(names[3], names[0], 'the same name again after a restart');
    assert.equal(new Set(names.slice(0, 3)).size, 3);
  });

  it('records one without a key as before: the same reason and message once within ten minutes', async () => {
    const posted: string[] = [];
    const recorder = createEventRecorder(
      {
        requestJson: <T>(o: { body?: string }): Promise<T> => {
          posted.push(o.body ?? '');
          return Promise.resolve({} as T);
        },
      },
      silentLogger,
    );
    const failedOver = { type: 'Warning' as const, reason: 'FailedOver', message: 'promoted db-1' };
    recordManaged(recorder, cluster('u1'), [failedOver, failedOver]);
    recordManaged(recorder, cluster('u1'), [{ ...failedOver, message: 'promoted db-2' }]);
    await new Promise((r) => setImmediate(r));
    assert.equal(posted.length, 2);
  });
});
