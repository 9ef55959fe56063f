/** Why a run ended before its phases did. */
export type StopReason = 'timeout' | 'SIGINT' | 'SIGTERM';

/**
 * Bounds the whole run: `stopped` resolves after `timeoutMs`, or on SIGINT/SIGTERM, so the bench can
 * print what it has and stop what it started. A second signal kills what is registered at once and exits.
 * Synchronous kill functions also run on process exit (the control plane has its own exit handlers).
 */
export class RunGuard {
  readonly stopped: Promise<StopReason>;
  private readonly killers = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private signalled = false;
  private readonly onSignal = (signal: NodeJS.Signals): void => {
    if (this.signalled) {
      this.killAll();
      process.exit(130);
    }
    this.signalled = true;
    this.resolve?.(signal === 'SIGINT' ? 'SIGINT' : 'SIGTERM');
  };
  private readonly onExit = (): void => this.killAll();
  private resolve: ((reason: StopReason) => void) | undefined;

  constructor(timeoutMs: number) {
    this.stopped = new Promise((resolve) => {
      this.resolve = resolve;
    });
    this.timer = setTimeout(() => this.resolve?.('timeout'), timeoutMs);
    this.timer.unref();
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
    process.on('exit', this.onExit);
  }

  /** Registers a synchronous last-resort kill (e.g. SIGKILL to a child's process group); returns its removal. */
  onKill(kill: () => void): () => void {
    this.killers.add(kill);
    return () => this.killers.delete(kill);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    process.off('exit', this.onExit);
  }

  private killAll(): void {
    for (const kill of this.killers) {
      try {
        kill();
      } catch {
        // exiting: do what can be done
      }
    }
  }
}
