// How a session to a member ends, whatever the member does. mysql2's end() sends COM_QUIT and waits for
// the server to close; its destroy() is only an alias of close(), which half-closes the socket
// (stream.end()): the socket stays open until the peer closes its side. A member that never answers (its
// node powered off, cut off the network, its mysqld stopped) never does, and TCP gives up on the
// unacknowledged FIN only after ~15 minutes: the controller (or the agent) holds the socket, and the
// process its event loop, that long for every such session.
import type { Connection } from 'mysql2/promise';

/** How long endSession() waits for the member to answer COM_QUIT before the socket is dropped. */
export const QUIT_WAIT_MS = 1_000;

/**
 * Drops the session at once: no more statements on it, and its socket (the TLS socket and the TCP one
 * under it) destroyed, not half-closed. For a session whose statement passed its deadline, or one that
 * is no longer used.
 */
export function dropSession(c: Connection): void {
  c.destroy();
  // The promise wrapper's core connection: mysql2 keeps its socket (the TLS one once TLS is up) as `stream`.
  const core = (c as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection;
  core?.stream?.destroy?.();
}

/**
 * Ends the session politely (COM_QUIT, so the member does not count an aborted connection) when the
 * member answers within `waitMs`, then drops it: a member that does not answer does not hold it open.
 */
export async function endSession(c: Connection, waitMs = QUIT_WAIT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, waitMs);
  });
  try {
    await Promise.race([c.end().catch(() => undefined), gaveUp]);
  } finally {
    clearTimeout(timer);
    dropSession(c);
  }
}

/**
 * For a statement's catch: a statement that passed its deadline (mysql2 rejects it but leaves it running
 * on the session) drops the session, so that nothing queues behind it and the socket does not stay
 * open; the error is thrown on.
 */
export function dropIfTimedOut(c: Connection): (e: unknown) => never {
  return (e: unknown) => {
    if ((e as { code?: string }).code === 'PROTOCOL_SEQUENCE_TIMEOUT') dropSession(c);
    throw e;
  };
}
