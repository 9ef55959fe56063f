import { join } from 'node:path';
import { renderFlags } from './flags.js';
import { postJson } from './net.js';
import type { ProbeResult } from './readiness.js';

export interface EtcdLayout {
  readonly dataDir: string;
  readonly clientPort: number;
}

export function etcdLayout(dir: string, clientPort: number): EtcdLayout {
  return { dataDir: join(dir, 'etcd'), clientPort };
}

export function etcdUrl(layout: EtcdLayout): string {
  return `http://127.0.0.1:${layout.clientPort}`;
}

/** `durable`: fsync every write, for a control plane whose data should survive a power cut. */
export function etcdArgs(layout: EtcdLayout, durable: boolean, extra?: readonly string[]): string[] {
  const url = etcdUrl(layout);
  return renderFlags(
    {
      name: 'recon8s-test',
      'data-dir': layout.dataDir,
      'listen-client-urls': url,
      'advertise-client-urls': url,
      // A single member has no peers; port 0 keeps even its unused peer listener off fixed ports.
      'listen-peer-urls': 'http://127.0.0.1:0',
      'initial-advertise-peer-urls': 'http://127.0.0.1:2380',
      'initial-cluster': 'recon8s-test=http://127.0.0.1:2380',
      // A lone member elects itself only after an election timeout (1 s by default); it has no peers
      // that a short timeout could lose contact with.
      'heartbeat-interval': '10',
      'election-timeout': '100',
      'log-level': 'warn',
      // Test data is thrown away with the control plane: durability would only cost time.
      ...(durable ? {} : { 'unsafe-no-fsync': 'true' }),
    },
    extra,
  );
}

export async function probeEtcd(layout: EtcdLayout): Promise<ProbeResult> {
  const response = await fetch(`${etcdUrl(layout)}/health`, { signal: AbortSignal.timeout(2_000) });
  const body = await response.text();
  return response.ok && (JSON.parse(body) as { health?: string }).health === 'true'
    ? true
    : `/health answered ${response.status} ${body}`;
}

interface ResponseHeader {
  readonly header: { readonly revision: string };
}

/**
 * Compacts etcd's history up to its current revision, so reading or watching from any older
 * resourceVersion that reaches etcd fails with 410 Gone. Uses etcd's JSON gateway: no etcdctl needed.
 */
export async function compactEtcd(layout: EtcdLayout): Promise<number> {
  // Any range answers with the store's current revision in its header; the key needs not exist.
  const range = await postJson<ResponseHeader>(`${etcdUrl(layout)}/v3/kv/range`, {
    key: Buffer.from('/').toString('base64'),
  });
  const revision = range.header.revision;
  await postJson(`${etcdUrl(layout)}/v3/kv/compaction`, { revision, physical: true });
  return Number(revision);
}
