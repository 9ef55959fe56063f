/**
 * A reconcile failure that retrying cannot fix — typically an invalid spec. The worker pool does
 * not requeue the key; it comes back when its object changes. Found anywhere in an error's `cause`
 * chain, so it can be wrapped (controller-runtime's reconcile.TerminalError, matched by errors.Is).
 */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export function isTerminalError(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    if (e instanceof TerminalError) return true;
    seen.add(e);
  }
  return false;
}
