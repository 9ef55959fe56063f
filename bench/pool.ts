/** Runs `fn` over `items` with at most `concurrency` at once; failures are collected, not thrown. */
export async function runPool<T>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<{ errors: unknown[] }> {
  const errors: unknown[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      try {
        await fn(items[i] as T, i);
      } catch (e) {
        errors.push(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return { errors };
}

/** Starts `fn` for each item at `perSecond`, without waiting for one to finish before the next starts. */
export async function runPaced<T>(
  items: readonly T[],
  perSecond: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<{ errors: unknown[] }> {
  const errors: unknown[] = [];
  const started: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < items.length; i++) {
    const due = t0 + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    started.push(fn(items[i] as T, i).catch((e: unknown) => void errors.push(e)));
  }
  await Promise.all(started);
  return { errors };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` every `intervalMs` until it returns true; throws after `timeoutMs`. */
export async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 500,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline)
      throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(intervalMs);
  }
}
