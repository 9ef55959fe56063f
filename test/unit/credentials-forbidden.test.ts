import assert from 'node:assert/strict';
import { ensureCredentials } from '../../lib/controller/mysql-cluster/credentials-secret.js';
import type { CustomResource } from '../../lib/controller/kind-controller.js';
import type { KubeClient, RawRequest } from '../../lib/kube/index.js';
import { KubeApiError } from '../../lib/kube/index.js';

/** A client that may read nothing but who it is: every Secrets request is a 403. */
function forbiddenClient(username: string): KubeClient {
  const requestJson = (r: RawRequest): Promise<unknown> =>
    r.path.endsWith('/selfsubjectreviews')
      ? Promise.resolve({ status: { userInfo: { username } } })
      : Promise.reject(new KubeApiError(403, 'forbidden', '{"kind":"Status","reason":"Forbidden"}', {}));
  return { requestJson, request: requestJson } as unknown as KubeClient;
}

const cr = {
  apiVersion: 'recon8s.dev/v1alpha1',
  kind: 'MySQLCluster',
  metadata: { name: 'orders', namespace: 'shop', uid: 'u1', generation: 1 },
  spec: { replicas: 1 },
} as unknown as CustomResource;

describe('CredentialsForbidden: the grant it asks for', () => {
  it("names the install's own credentials ClusterRole (the controller's --credentials-cluster-role)", async () => {
    const state = await ensureCredentials(
      forbiddenClient('system:serviceaccount:team-a:team-a'),
      cr,
      'team-a:team-a-credentials',
    );
    assert.equal(state.state, 'forbidden');
    assert.match(
      'message' in state ? state.message : '',
      /bind the ClusterRole team-a:team-a-credentials there \(kubectl create rolebinding team-a:team-a-credentials -n shop --clusterrole=team-a:team-a-credentials --serviceaccount=team-a:team-a\)$/,
    );
  });

  it('names recon8s-credentials when not told otherwise (the default install)', async () => {
    const state = await ensureCredentials(forbiddenClient('system:serviceaccount:recon8s-system:recon8s'), cr);
    assert.match('message' in state ? state.message : '', /--clusterrole=recon8s-credentials --serviceaccount=/);
  });
});
