import assert from 'node:assert/strict';
import type { ExecConfig } from '../../lib/kube/kubeconfig.js';
import { loadKubeConfig } from '../../lib/kube/kubeconfig.js';
import type { ConfigEnvironment } from '../../lib/kube/kubeconfig.js';
import { TOKEN_FILE_REFRESH_MS, authenticatorFor, parseExecCredential } from '../../lib/kube/auth.js';

/** A machine with these files and environment variables. */
function machine(files: Record<string, string>, env: Record<string, string> = {}): ConfigEnvironment {
  return {
    env,
    home: '/home/u',
    exists: (p) => p in files,
    readFile: (p) => {
      const text = files[p];
      if (text === undefined) throw new Error(`ENOENT: ${p}`);
      return text;
    },
  };
}

const KUBECONFIG = `
apiVersion: v1
kind: Config
current-context: dev
clusters:
  - name: dev-cluster
    cluster: { server: "https://dev.example:6443/", certificate-authority: certs/ca.crt, tls-server-name: api.dev }
  - name: prod-cluster
    cluster: { server: "https://prod.example:6443", certificate-authority-data: Q0E= }
users:
  - name: dev-user
    user: { client-certificate: /abs/dev.crt, client-key: dev.key }
  - name: prod-user
    user: { tokenFile: ../tokens/prod }
contexts:
  - name: dev
    context: { cluster: dev-cluster, user: dev-user, namespace: team-a }
  - name: prod
    context: { cluster: prod-cluster, user: prod-user }
`;

describe('kubeconfig loading (recon8s reads it itself, without client-node)', () => {
  it('picks the current context, resolves relative paths against the file, and keeps the namespace', () => {
    const c = loadKubeConfig(
      { kind: 'file', path: '/cfg/kube/config' },
      undefined,
      machine({ '/cfg/kube/config': KUBECONFIG }),
    );
    assert.equal(c.context, 'dev');
    assert.equal(c.namespace, 'team-a');
    assert.equal(c.cluster.server, 'https://dev.example:6443');
    assert.equal(c.cluster.certificateAuthority, '/cfg/kube/certs/ca.crt');
    assert.equal(c.cluster.tlsServerName, 'api.dev');
    assert.equal(c.user.clientCertificate, '/abs/dev.crt');
    assert.equal(c.user.clientKey, '/cfg/kube/dev.key');
  });

  it('uses the context it is told to; a missing one is named with those that exist', () => {
    const m = machine({ '/c': KUBECONFIG });
    const prod = loadKubeConfig({ kind: 'file', path: '/c' }, 'prod', m);
    assert.equal(prod.cluster.certificateAuthorityData, 'Q0E=');
    assert.equal(prod.user.tokenFile, '/tokens/prod');
    assert.equal(prod.namespace, undefined);
    assert.throws(
      () => loadKubeConfig({ kind: 'file', path: '/c' }, 'staging', m),
      /no context "staging" \(it has: dev, prod\)/,
    );
  });

  it('merges $KUBECONFIG the way kubectl does: the first file naming an entry wins, missing files are skipped', () => {
    const second = `
current-context: other
clusters: [{ name: dev-cluster, cluster: { server: "https://shadowed:1" } }, { name: c2, cluster: { server: "https://c2:1" } }]
users: [{ name: u2, user: { token: t2 } }]
contexts: [{ name: other, context: { cluster: c2, user: u2 } }]
`;
    const m = machine({ '/a': KUBECONFIG, '/b': second }, { KUBECONFIG: '/missing:/a:/b' });
    const dev = loadKubeConfig({ kind: 'default' }, undefined, m);
    assert.equal(dev.context, 'dev', 'current-context of the first file that sets it');
    assert.equal(dev.cluster.server, 'https://dev.example:6443', 'the first dev-cluster wins');
    const other = loadKubeConfig({ kind: 'default' }, 'other', m);
    assert.equal(other.cluster.server, 'https://c2:1');
    assert.equal(other.user.token, 't2');
  });

  it('falls back from $KUBECONFIG to ~/.kube/config to the pod, and says what it looked for', () => {
    const home = loadKubeConfig({ kind: 'default' }, undefined, machine({ '/home/u/.kube/config': KUBECONFIG }));
    assert.equal(home.context, 'dev');
    const pod = loadKubeConfig(
      { kind: 'default' },
      undefined,
      machine(
        { '/var/run/secrets/kubernetes.io/serviceaccount/namespace': 'recon8s-system\n' },
        { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      ),
    );
    assert.equal(pod.cluster.server, 'https://[fd00::1]:443');
    assert.equal(pod.cluster.certificateAuthority, '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt');
    assert.equal(pod.user.tokenFile, '/var/run/secrets/kubernetes.io/serviceaccount/token');
    assert.equal(pod.namespace, 'recon8s-system');
    assert.throws(
      () => loadKubeConfig({ kind: 'default' }, undefined, machine({})),
      /\$KUBECONFIG is unset, \/home\/u\/\.kube\/config does not exist/,
    );
  });

  it('refuses what it does not support, naming the file, the entry and the field', () => {
    const withProvider = `
clusters: [{ name: c, cluster: { server: "https://c:1" } }]
users: [{ name: oidc-user, user: { auth-provider: { name: oidc } } }]
contexts: [{ name: x, context: { cluster: c, user: oidc-user } }]
current-context: x
`;
    assert.throws(
      () => loadKubeConfig({ kind: 'file', path: '/p' }, undefined, machine({ '/p': withProvider })),
      /kubeconfig \/p: users\[oidc-user\]\.auth-provider is not supported by recon8s; use an exec credential plugin/,
    );
    const withProxy = `clusters: [{ name: c, cluster: { server: "https://c:1", proxy-url: "http://proxy:3128" } }]`;
    assert.throws(
      () => loadKubeConfig({ kind: 'file', path: '/p' }, undefined, machine({ '/p': withProxy })),
      /clusters\[c\]\.proxy-url is not supported/,
    );
    assert.throws(
      () => loadKubeConfig({ kind: 'file', path: '/p' }, undefined, machine({ '/p': 'clusters: {' })),
      /kubeconfig \/p is not valid YAML/,
    );
    const badExec = `users: [{ name: e, user: { exec: { command: aws, apiVersion: client.authentication.k8s.io/v1alpha1 } } }]`;
    assert.throws(
      () => loadKubeConfig({ kind: 'file', path: '/p' }, undefined, machine({ '/p': badExec })),
      /users\[e\]\.exec\.apiVersion is "client\.authentication\.k8s\.io\/v1alpha1"; expected client\.authentication\.k8s\.io\/v1 or v1beta1/,
    );
  });
});

describe('kube authentication', () => {
  const exec: ExecConfig = { command: 'plugin', args: [], env: [], apiVersion: 'client.authentication.k8s.io/v1' };

  it('reads a token file again each minute (bound service account tokens rotate), and at once after a 401', async () => {
    let now = 0;
    let token = 'one';
    let reads = 0;
    const auth = authenticatorFor(
      { name: 'sa', tokenFile: '/t' },
      {
        now: () => now,
        readFile: () => {
          reads++;
          return `${token}\n`;
        },
        runPlugin: () => Promise.reject(new Error('unused')),
      },
    );
    assert.equal((await auth.credentials()).authorization, 'Bearer one');
    token = 'two';
    now = TOKEN_FILE_REFRESH_MS - 1;
    assert.equal((await auth.credentials()).authorization, 'Bearer one');
    now = TOKEN_FILE_REFRESH_MS;
    assert.equal((await auth.credentials()).authorization, 'Bearer two');
    token = 'three';
    auth.unauthorized();
    assert.equal((await auth.credentials()).authorization, 'Bearer three');
    assert.equal(reads, 3);
  });

  it('runs an exec plugin once for concurrent requests, again shortly before expiry, and after a 401', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const runs: string[] = [];
    const auth = authenticatorFor(
      { name: 'e', exec },
      {
        now: () => now,
        readFile: () => '',
        runPlugin: (_exec, input) => {
          runs.push(input);
          return Promise.resolve(
            JSON.stringify({
              apiVersion: exec.apiVersion,
              kind: 'ExecCredential',
              status: { token: `t${runs.length}`, expirationTimestamp: '2026-01-01T00:10:00Z' },
            }),
          );
        },
      },
    );
    const [a, b] = await Promise.all([auth.credentials(), auth.credentials()]);
    assert.equal(a.authorization, 'Bearer t1');
    assert.equal(b.authorization, 'Bearer t1');
    assert.equal(runs.length, 1);
    assert.deepEqual(JSON.parse(runs[0] ?? ''), {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
    now = Date.parse('2026-01-01T00:09:49Z');
    assert.equal((await auth.credentials()).authorization, 'Bearer t1');
    now = Date.parse('2026-01-01T00:09:51Z');
    assert.equal((await auth.credentials()).authorization, 'Bearer t2', 'fetched again 10 s before it expires');
    auth.unauthorized();
    assert.equal((await auth.credentials()).authorization, 'Bearer t3');
  });

  it("never repeats a plugin's output in its errors (it may hold a credential)", () => {
    assert.throws(
      () => parseExecCredential('secret-token-123', exec),
      (e: Error) => !e.message.includes('secret-token-123') && /printed no JSON/.test(e.message),
    );
    assert.throws(
      () => parseExecCredential(JSON.stringify({ status: { clientCertificateData: 'CERT' } }), exec),
      /returned neither a token nor a client certificate and key/,
    );
  });

  it('refuses a client certificate without its key', () => {
    assert.throws(
      () => authenticatorFor({ name: 'half', clientCertificateData: 'Q0VSVA==' }),
      /user half has a client certificate without a key/,
    );
  });
});
