import type { ControllerMetrics } from '../observability/controller-metrics.js';

/**
 * What a WorkQueue reports, in the shape of client-go's workqueue metrics provider: each hook is
 * called when its figure changes (durations in seconds). `onScrape(update)` asks for `update` to
 * run before every scrape — the in-flight gauges are computed then rather than on a ticker — and
 * returns its unsubscribe.
 */
export interface QueueMetrics {
  /** A key became waiting (workqueue_adds_total). */
  added(): void;
  /** Keys waiting, including those parked behind their own in-flight run (workqueue_depth). */
  depth(keys: number): void;
  /** From add to get (workqueue_queue_duration_seconds). */
  queued(seconds: number): void;
  /** From get to done (workqueue_work_duration_seconds). */
  processed(seconds: number): void;
  /** A delayed or rate-limited add (workqueue_retries_total). */
  retried(): void;
  /** workqueue_unfinished_work_seconds and workqueue_longest_running_processor_seconds. */
  inFlight(unfinishedSeconds: number, longestSeconds: number): void;
  onScrape(update: () => void): () => void;
}

export const noopQueueMetrics: QueueMetrics = {
  added: () => {},
  depth: () => {},
  queued: () => {},
  processed: () => {},
  retried: () => {},
  inFlight: () => {},
  onScrape: () => () => {},
};

/** The workqueue_* families of `metrics`, for the queue labelled `name` (controller-runtime uses the controller's name). */
export function workqueueMetrics(metrics: ControllerMetrics, name: string): QueueMetrics {
  const w = metrics.workqueue;
  const labels = { name };
  const depth = w.depth.labels(labels);
  const adds = w.adds.labels(labels);
  const queueDuration = w.queueDuration.labels(labels);
  const workDuration = w.workDuration.labels(labels);
  const retries = w.retries.labels(labels);
  const unfinished = w.unfinishedWork.labels(labels);
  const longest = w.longestRunningProcessor.labels(labels);
  return {
    added: () => adds.inc(),
    depth: (n) => depth.set(n),
    queued: (s) => queueDuration.observe(s),
    processed: (s) => workDuration.observe(s),
    retried: () => retries.inc(),
    inFlight: (u, l) => {
      unfinished.set(u);
      longest.set(l);
    },
    onScrape: (update) => metrics.registry.onCollect(update),
  };
}
