/** A named probe: it passes by returning (or resolving), and fails by throwing (or rejecting). */
export type HealthCheck = () => void | Promise<void>;

export type HealthChecks = Readonly<Record<string, HealthCheck>>;

export interface CheckRequest {
  /** `?verbose`: list every check even when all pass. */
  readonly verbose: boolean;
  /** `?exclude=name` (repeatable): checks reported as excluded and not run. */
  readonly exclude: ReadonlySet<string>;
  /** `/readyz/<name>`: run this check alone. */
  readonly only?: string;
}

export interface CheckOutcome {
  /** 200 all pass, 503 one failed, 404 `only` names no check. */
  readonly status: 200 | 404 | 503;
  readonly body: string;
  /** Failed checks with their errors, for the log: the body withholds reasons. */
  readonly failures: readonly { readonly name: string; readonly error: unknown }[];
}

/**
 * Runs `checks` concurrently, each bounded by `timeoutMs` (a check that hangs fails), and words
 * the answer as kube-apiserver's /healthz and /readyz do: `ok` when all pass; with `?verbose`, or
 * whenever one fails, a line per check (`[+]name ok`, `[-]name failed: reason withheld`) and a
 * last line `<endpoint> check passed|failed`. Reasons stay out of the body (it is unauthenticated)
 * and go to `failures`.
 */
export async function runChecks(
  endpoint: string,
  checks: HealthChecks,
  req: CheckRequest,
  timeoutMs: number,
): Promise<CheckOutcome> {
  if (req.only !== undefined) {
    const check = Object.hasOwn(checks, req.only) ? checks[req.only] : undefined;
    if (check === undefined) return { status: 404, body: `no such check: ${req.only}\n`, failures: [] };
    const error = await failure(check, timeoutMs);
    return error === undefined
      ? { status: 200, body: 'ok', failures: [] }
      : {
          status: 503,
          body: `[-]${req.only} failed: reason withheld\n${endpoint} check failed\n`,
          failures: [{ name: req.only, error }],
        };
  }
  const names = Object.keys(checks);
  const results = await Promise.all(
    names.map((name) => (req.exclude.has(name) ? 'excluded' : failure(checks[name], timeoutMs))),
  );
  const failures: { name: string; error: unknown }[] = [];
  const lines = names.map((name, i) => {
    const r = results[i];
    if (r === 'excluded') return `[+]${name} excluded: ok`;
    if (r === undefined) return `[+]${name} ok`;
    failures.push({ name, error: r });
    return `[-]${name} failed: reason withheld`;
  });
  for (const name of req.exclude)
    if (!Object.hasOwn(checks, name))
      lines.push(`warn: some health checks cannot be excluded: no matches for "${name}"`);
  if (failures.length > 0) return { status: 503, body: `${lines.join('\n')}\n${endpoint} check failed\n`, failures };
  return { status: 200, body: req.verbose ? `${lines.join('\n')}\n${endpoint} check passed\n` : 'ok', failures };
}

/** undefined when the check passed, else why it failed. */
async function failure(check: HealthCheck, timeoutMs: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Error>((resolve) => {
    timer = setTimeout(() => resolve(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    const passed = Promise.resolve()
      .then(check)
      .then(
        () => undefined,
        (err: unknown) => err ?? new Error('check failed'),
      );
    return await Promise.race([passed, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
