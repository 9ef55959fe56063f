import type { AddressInfo } from 'node:net';

/** A `host:port` listen address: `:8080` (every interface), `127.0.0.1:0` (a free port), `[::1]:8081`. */
export interface ListenAddress {
  /** Undefined: every interface. */
  readonly host: string | undefined;
  readonly port: number;
}

export function parseListenAddress(addr: string): ListenAddress {
  const colon = addr.lastIndexOf(':');
  const portText = addr.slice(colon + 1);
  let host = addr.slice(0, colon);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const port = Number(portText);
  if (colon < 0 || !/^\d+$/.test(portText) || port > 65535 || (host.includes(':') && !addr.startsWith('['))) {
    throw new Error(
      `invalid listen address ${JSON.stringify(addr)}: want host:port, e.g. ":8080", "127.0.0.1:0" or "[::1]:8081"`,
    );
  }
  return { host: host === '' ? undefined : host, port };
}

/** The bound address as `host:port`, IPv6 in brackets. */
export function formatAddress(info: AddressInfo): string {
  return info.family === 'IPv6' ? `[${info.address}]:${info.port}` : `${info.address}:${info.port}`;
}
