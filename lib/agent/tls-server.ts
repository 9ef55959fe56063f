// The agent's TLS port: what the controller asks of the member (http-api.ts's PATHS_BY_PORT.tls, which
// its HTTP port refuses), served with the member's own certificate, for the controller, which verifies by the cluster's CA and the member's name that the
// answer comes from that member (agent-http.ts) — an answer it acts on (a discard of transactions, the
// end of a rotation) must not come from whoever sits on the pod network. The files are the TLS Secret
// as the kubelet mounts it: read again when they change (a renewal), and waited for when absent.
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { Server } from 'node:https';

export interface TlsListen {
  readonly host?: string;
  readonly port: number;
  readonly certFile: string;
  readonly keyFile: string;
}

/** How often the files are looked at again (the kubelet updates a mounted Secret within about a minute). */
const RELOAD_MS = 30_000;

export class AgentTlsServer {
  private server: Server | undefined;
  private timer: NodeJS.Timeout | undefined;
  private loaded = '';
  private stopped = false;

  constructor(
    private readonly listen: TlsListen,
    private readonly handle: (req: IncomingMessage, res: ServerResponse) => void,
    private readonly log: (message: string) => void,
  ) {}

  /** Starts serving once the certificate and key can be read; resolves once listening or waiting. */
  async start(): Promise<void> {
    await this.look();
    this.timer = setInterval(() => void this.look(), RELOAD_MS);
    this.timer.unref();
  }

  /** The port it listens on, once it does. */
  port(): number | undefined {
    const address = this.server?.address();
    return typeof address === 'object' && address ? address.port : undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const server = this.server;
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  private async look(): Promise<void> {
    let cert: Buffer;
    let key: Buffer;
    try {
      [cert, key] = await Promise.all([readFile(this.listen.certFile), readFile(this.listen.keyFile)]);
    } catch (e) {
      if (!this.server) this.log(`the TLS port waits for the member's certificate: ${(e as Error).message}`);
      return;
    }
    const seen = `${cert.toString('base64')}/${key.length}`;
    if (seen === this.loaded || this.stopped) return;
    try {
      if (this.server) {
        this.server.setSecureContext({ cert, key });
        this.log('the TLS port serves the renewed certificate');
      } else {
        const server = createServer({ cert, key, minVersion: 'TLSv1.2' }, this.handle);
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(this.listen.port, this.listen.host, resolve);
        });
        this.server = server;
      }
      this.loaded = seen;
    } catch (e) {
      this.log(`the TLS port could not use the member's certificate: ${(e as Error).message}`);
    }
  }
}
