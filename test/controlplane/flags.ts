/** Command-line flags by name (without the leading dashes), rendered as `--name=value`. */
export type Flags = Readonly<Record<string, string>>;

/**
 * Our defaults with a caller's `--name=value` arguments on top: one replaces our default of the same
 * name (so a test can, say, turn the watch cache off), the others are added. A bare `--name` means
 * `--name=true`, as for Go's boolean flags.
 */
export function renderFlags(defaults: Flags, extra: readonly string[] = []): string[] {
  const merged = new Map(Object.entries(defaults));
  for (const arg of extra) {
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    if (!match?.[1]) throw new Error(`Expected an extra flag of the form --name=value, got ${JSON.stringify(arg)}.`);
    merged.set(match[1], match[2] ?? 'true');
  }
  return [...merged].map(([name, value]) => `--${name}=${value}`);
}
