// Who the client is, as the API server authenticated it (a SelfSubjectReview, which every
// authenticated identity may create): what a message telling the user which grant to make must name.
import type { KubeClient } from './client.js';
import { HttpMethod } from './client.js';

const known = new WeakMap<KubeClient, Promise<string | undefined>>();

/** The user name the API server sees (e.g. `system:serviceaccount:recon8s-system:recon8s`), asked once per client; undefined when it cannot say. */
export function whoAmI(client: KubeClient): Promise<string | undefined> {
  let answer = known.get(client);
  if (!answer) {
    answer = client
      .requestJson<{ status?: { userInfo?: { username?: string } } }>({
        method: HttpMethod.POST,
        path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
        headers: { 'Content-Type': 'application/json' },
      })
      .then((r) => r.status?.userInfo?.username)
      .catch(() => undefined);
    known.set(client, answer);
  }
  return answer;
}

/** The subject of a RoleBinding for a user name, as `kubectl create rolebinding` takes it. */
export function bindingSubject(username: string | undefined): string {
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(username ?? '');
  if (sa) return `--serviceaccount=${sa[1]}:${sa[2]}`;
  return username ? `--user=${username}` : '--serviceaccount=<operator namespace>:recon8s';
}
