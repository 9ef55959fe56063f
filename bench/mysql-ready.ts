// Time from creating a MySQLCluster to every member Ready, on the real node (test/node), with the
// controller running in this process: `npm run bench:mysql -- [--members 3] [--rounds 2]`.
// A script, never run by `npm test`: it prints figures (progress on stderr, a table and one JSON line on stdout).
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { freshRestrictedNamespace } from '../test/e2e/cluster.js';
import { startTestController } from '../test/integration/support/controller.js';
import { startNodeCluster } from '../test/node/index.js';

const { values } = parseArgs({
  options: { members: { type: 'string', default: '3' }, rounds: { type: 'string', default: '2' } },
});
const members = Number(values.members);
const rounds = Number(values.rounds);
if (!Number.isInteger(members) || members < 1 || members > 9 || !Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write('usage: npm run bench:mysql -- [--members 1..9] [--rounds N]\n');
  process.exit(2);
}

const progress = (line: string): boolean => process.stderr.write(`[bench] ${line}\n`);
const nodeStarted = performance.now();
const node = await startNodeCluster({ onOutput: () => undefined });
progress(`node ready in ${((performance.now() - nodeStarted) / 1000).toFixed(1)} s`);
const results: { round: number; readyS: number; firstMemberS: number }[] = [];
try {
  for (let round = 1; round <= rounds; round++) {
    const ns = await freshRestrictedNamespace(node, `bench-mysql-${round}`);
    const controller = await startTestController(node, { namespaces: [ns], resyncPeriodMs: 60_000 });
    const kc = node.kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const t0 = performance.now();
    await custom.createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'db' },
        spec: {
          replicas: members,
          version: '9.7',
          image: node.images.mysql,
          imagePullPolicy: 'Never',
          resources: { requests: { cpu: '100m', memory: '512Mi' }, limits: { memory: '1Gi' } },
        },
      },
    });
    let firstMemberS = 0;
    for (;;) {
      const pods = await core.listNamespacedPod({
        namespace: ns,
        labelSelector: 'app.kubernetes.io/instance=db,app.kubernetes.io/component=database',
      });
      const ready = pods.items.filter((p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      ).length;
      if (ready >= 1 && firstMemberS === 0) firstMemberS = (performance.now() - t0) / 1000;
      if (ready === members) break;
      if (performance.now() - t0 > 600_000) throw new Error(`not Ready after 600 s: ${ready}/${members} members`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const readyS = (performance.now() - t0) / 1000;
    results.push({ round, readyS, firstMemberS });
    progress(
      `round ${round}: first member Ready ${firstMemberS.toFixed(1)} s, all ${members} Ready ${readyS.toFixed(1)} s`,
    );
    await controller.stop();
    await node.kubectl(['delete', 'namespace', ns, '--wait=false']);
  }
} finally {
  await node.stop();
}
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};
process.stdout.write(
  `MySQLCluster of ${members} members on the real node (2 cores, load ${loadavg()[0]?.toFixed(2)})\n`,
);
process.stdout.write(
  `| round | first member Ready (s) | all Ready (s) |\n|---|---|---|\n${results.map((r) => `| ${r.round} | ${r.firstMemberS.toFixed(1)} | ${r.readyS.toFixed(1)} |`).join('\n')}\n`,
);
process.stdout.write(
  `${JSON.stringify({ members, rounds, medianReadyS: Number(median(results.map((r) => r.readyS)).toFixed(1)), results })}\n`,
);
