import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A kubeconfig pointing at a port where nothing listens (127.0.0.1:1): for "cannot reach the API server". */
export function writeUnreachableKubeconfig(dir: string): string {
  const path = join(dir, 'unreachable.kubeconfig');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`,
  );
  return path;
}
