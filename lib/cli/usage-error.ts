/** Wrong words on the command line or an unreadable input: exit 2, with the usage when it helps. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}
