// Metrics: prom-client's registry and metric types (its text exposition, label handling, the process
// and Node.js runtime metrics Prometheus users expect), plus the one thing the controller needs
// beyond it: hooks run right before each scrape, for gauges computed on demand (the work queue's
// unfinished work). One registry per controller, never prom-client's global one, so that several
// controllers in one process (tests) keep their own figures. The process and runtime metrics describe
// the process, not a controller: they are collected once per process (each collection keeps an
// event-loop monitor and a GC observer running) and shown by every registry that asks for them.
import { Counter, Gauge, Histogram, Registry as PromRegistry, collectDefaultMetrics } from 'prom-client';

export { Counter, Gauge, Histogram };

/** The Prometheus text format 0.0.4 content type. */
export const PROMETHEUS_CONTENT_TYPE: string = PromRegistry.PROMETHEUS_CONTENT_TYPE;

export type Labels<L extends string> = Readonly<Record<L, string>>;

export interface MetricOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly L[];
}

export interface HistogramOptions<L extends string> extends MetricOptions<L> {
  readonly buckets?: readonly number[];
}

let processRegistry: PromRegistry | undefined;

/** The one registry of process_* and nodejs_* metrics, collecting from its first use on. */
function processMetrics(): PromRegistry {
  if (!processRegistry) {
    processRegistry = new PromRegistry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class Registry {
  readonly prom = new PromRegistry();
  readonly #collectHooks = new Set<() => void>();
  #withProcessMetrics = false;

  counter<L extends string = never>(o: MetricOptions<L>): Counter<L> {
    return new Counter<L>({
      name: o.name,
      help: o.help,
      labelNames: [...(o.labelNames ?? [])],
      registers: [this.prom],
    });
  }

  gauge<L extends string = never>(o: MetricOptions<L>): Gauge<L> {
    return new Gauge<L>({ name: o.name, help: o.help, labelNames: [...(o.labelNames ?? [])], registers: [this.prom] });
  }

  histogram<L extends string = never>(o: HistogramOptions<L>): Histogram<L> {
    return new Histogram<L>({
      name: o.name,
      help: o.help,
      labelNames: [...(o.labelNames ?? [])],
      buckets: [...(o.buckets ?? [])],
      registers: [this.prom],
    });
  }

  /** process_* (CPU, resident memory, open file descriptors, start time) and nodejs_* (heap, event loop lag, GC). */
  collectProcessMetrics(): void {
    processMetrics();
    this.#withProcessMetrics = true;
  }

  /** Runs `hook` before every exposition (to set gauges computed on demand); returns its unsubscribe. */
  onCollect(hook: () => void): () => void {
    // A wrapper per call, so subscribing one function twice and unsubscribing once stays correct.
    const entry = (): void => hook();
    this.#collectHooks.add(entry);
    return () => this.#collectHooks.delete(entry);
  }

  /** The text exposition of every metric. */
  async metrics(): Promise<string> {
    for (const hook of [...this.#collectHooks]) hook();
    const own = await this.prom.metrics();
    return this.#withProcessMetrics ? `${own}\n${await processMetrics().metrics()}` : own;
  }
}

function matches(
  series: Readonly<Record<string, string | number | undefined>>,
  labels: Readonly<Record<string, string>>,
): boolean {
  const keys = Object.keys(labels);
  return keys.length === Object.keys(series).length && keys.every((k) => String(series[k]) === labels[k]);
}

/** The value of one series of a counter or gauge: 0 when it was never set (tests, benchmarks). */
export async function valueOf<L extends string>(metric: Counter<L> | Gauge<L>, labels: Labels<L>): Promise<number> {
  const { values } = await metric.get();
  return values.find((v) => matches(v.labels, labels))?.value ?? 0;
}

/** Count and sum of one series of a histogram (tests, benchmarks). */
export async function histogramOf<L extends string>(
  metric: Histogram<L>,
  labels: Labels<L>,
): Promise<{ readonly count: number; readonly sum: number }> {
  const { name, values } = await metric.get();
  const of = (series: string): number =>
    values.find((v) => v.metricName === series && matches(v.labels, labels))?.value ?? 0;
  return { count: of(`${name}_count`), sum: of(`${name}_sum`) };
}
