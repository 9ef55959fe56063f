import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * A TCP proxy on 127.0.0.1 in front of the API server, so a test can cut one client off (the
 * controller) while it keeps talking to the API server itself. TLS passes through untouched (the
 * serving certificate is for 127.0.0.1, whatever the port).
 *
 * `cut()` drops every connection and holds new ones (accepted, not forwarded) until `reconnect()`: to the
 * controller the API server has vanished, its watches end and its retries hang, the way a network
 * partition looks. The test's own changes meanwhile reach the API server directly.
 */
export interface ApiProxy {
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** A copy of `kc` whose current cluster is reached through the proxy. */
  kubeConfig(kc: KubeConfig): KubeConfig;
  cut(): void;
  reconnect(): void;
  close(): Promise<void>;
}

export async function startApiProxy(target: string): Promise<ApiProxy> {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  const held = new Set<Socket>();
  let isCut = false;

  const forward = (client: Socket): void => {
    const upstream = createConnection({ host: hostname, port: Number(port) });
    open.add(client);
    open.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  };

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    if (!isCut) return forward(client);
    held.add(client);
    client.on('error', () => held.delete(client)).on('close', () => held.delete(client));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `https://127.0.0.1:${address.port}`;

  return {
    server: url,
    kubeConfig(kc) {
      const current = kc.getCurrentCluster()?.name;
      const out = new KubeConfig();
      out.loadFromOptions({
        clusters: kc.getClusters().map((c) => (c.name === current ? { ...c, server: url } : c)),
        users: kc.getUsers(),
        contexts: kc.getContexts(),
        currentContext: kc.getCurrentContext(),
      });
      return out;
    },
    cut() {
      isCut = true;
      for (const s of [...open]) s.destroy();
      open.clear();
    },
    reconnect() {
      isCut = false;
      for (const client of [...held]) {
        held.delete(client);
        if (!client.destroyed) forward(client);
      }
    },
    async close() {
      isCut = true;
      for (const s of [...open, ...held]) s.destroy();
      open.clear();
      held.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
