// The in-pod scripts' clients verify a member by name: every connection over the network is
// ssl-mode=VERIFY_IDENTITY with the cluster's CA, to a host the members' certificate carries.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { memberDnsNames } from '../../lib/mysql/certificates.js';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { scriptSandbox } from './support/mysql-scripts.js';

/** The names the controller's certificate for the cluster "shop" (three members) carries. */
const CERTIFICATE_NAMES = new Set(
  memberDnsNames({
    namespace: 'default',
    members: ['shop-0.shop-headless', 'shop-1.shop-headless', 'shop-2.shop-headless'],
    services: ['shop-primary', 'shop-replicas'],
  }),
);

const CLIENTS = /^(mysql|mysqldump|mysqlbinlog|mysqladmin) /;

/** Each client call the fakes recorded that connects over TCP (--host=...): its host and its option file. */
function networkCalls(calls: string): { argv: string; host: string; options: string }[] {
  const out: { argv: string; host: string; options: string }[] = [];
  let current: { argv: string; host: string; options: string[] } | undefined;
  const flush = () => {
    if (current) out.push({ argv: current.argv, host: current.host, options: current.options.join('\n') });
    current = undefined;
  };
  for (const line of calls.split('\n')) {
    if (CLIENTS.test(line) || line === 'STDIN' || line.startsWith('rclone ')) {
      flush();
      const host = CLIENTS.test(line) ? / --host=(\S+)/.exec(line)?.[1] : undefined;
      if (host !== undefined) current = { argv: line, host, options: [] };
    } else current?.options.push(line);
  }
  flush();
  return out;
}

function assertVerifiedByName(calls: string, atLeast: number): void {
  const network = networkCalls(calls);
  assert.ok(network.length >= atLeast, `expected at least ${atLeast} network connections:\n${calls}`);
  for (const c of network) {
    assert.ok(CERTIFICATE_NAMES.has(c.host), `${c.host} is not a name the certificate carries: ${c.argv}`);
    assert.match(c.options, /^ssl-mode=VERIFY_IDENTITY$/m, `${c.argv}\n${c.options}`);
    assert.match(c.options, /^ssl-ca=\/etc\/mysql\/tls\/ca\.crt$/m, `${c.argv}\n${c.options}`);
    assert.doesNotMatch(c.options, /VERIFY_CA|ssl-mode=(PREFERRED|REQUIRED|DISABLED)/, c.options);
  }
}

describe('MySQLCluster scripts verify members by name', () => {
  let box: ScriptSandbox;
  beforeEach(() => {
    box = scriptSandbox();
  });
  afterEach(() => box.cleanup());

  it("bootstrap.sh: a new replica checks the primary Service's certificate for its name before it sends the replication password", () => {
    mkdirSync(box.path('volume'));
    const r = box.run('bootstrap.sh', {
      POD_NAME: 'shop-2',
      DATA_VOLUME: box.path('volume'),
      HEADLESS_SERVICE: 'shop-headless',
      PRIMARY_HOST: 'shop-primary',
      MYSQL_ROOT_PASSWORD: 'root-pw',
      MYSQL_REPLICATION_PASSWORD: 'repl-pw',
      MYSQL_ADMIN_PASSWORD: 'admin-pw',
      MYSQL_CLONE_PASSWORD: 'clone-pw',
      MYSQL_BACKUP_PASSWORD: 'backup-pw',
    });
    assert.equal(r.status, 0, r.stderr);
    assertVerifiedByName(box.calls(), 1);
  });

  it('backup.sh: the replicas Service, then the member by its report_host, each verified by name', () => {
    mkdirSync(box.path('backup'));
    const r = box.run('backup.sh', {
      CLUSTER_NAME: 'shop',
      BACKUP_HOST: 'shop-replicas',
      BACKUP_RETAIN: '3',
      BACKUP_DIR: box.path('backup'),
      MYSQL_BACKUP_PASSWORD: 'backup-pw',
    });
    assert.equal(r.status, 0, r.stderr);
    const hosts = new Set(networkCalls(box.calls()).map((c) => c.host));
    assert.deepEqual([...hosts].sort(), ['shop-1.shop-headless', 'shop-replicas']);
    assertVerifiedByName(box.calls(), 3);
  });

  it('binlog.sh: the primary Service, then the primary by its report_host, each verified by name', () => {
    mkdirSync(box.path('store', 'bucket', 'shop'), { recursive: true });
    const r = box.run('binlog.sh', {
      CLUSTER_NAME: 'shop',
      PRIMARY_HOST: 'shop-primary',
      STORE_BUCKET: 'bucket',
      STORE_PREFIX: 'shop',
      RCLONE_CONFIG_STORE_ACCESS_KEY_ID: 'k',
      RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY: 's',
      FAKE_STORE: box.path('store'),
      FAKE_REPORT_HOST: 'shop-0.shop-headless',
      BINLOG_SCRATCH: box.path('scratch'),
      TERMINATION_LOG: box.path('termination-log'),
      MYSQL_BACKUP_PASSWORD: 'backup-pw',
    });
    assert.equal(r.status, 0, r.stderr);
    const hosts = new Set(networkCalls(box.calls()).map((c) => c.host));
    assert.deepEqual([...hosts].sort(), ['shop-0.shop-headless', 'shop-primary']);
    assertVerifiedByName(box.calls(), 3);
  });
});
