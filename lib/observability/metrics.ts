/**
 * A small Prometheus registry: counters, gauges and histograms with typed labels, exposed in the
 * text format 0.0.4. Families appear sorted by name, series sorted by label values; a labelled
 * family shows no lines until a series exists, an unlabelled one always shows its single series
 * (as client_golang). Label pairs are written sorted by name, `le` last, as client_golang writes
 * them. Registering a name twice throws.
 */

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type Labels<L extends string> = Readonly<Record<L, string>>;

export interface MetricOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly L[];
}

export interface HistogramOptions<L extends string> extends MetricOptions<L> {
  /** Upper bounds, ascending; +Inf is implied. Default: Prometheus' DefBuckets. */
  readonly buckets?: readonly number[];
}

export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface Series<S> { readonly values: readonly string[]; readonly state: S }

abstract class Metric<L extends string, S> {
  abstract readonly type: 'counter' | 'gauge' | 'histogram';
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly #series = new Map<string, Series<S>>();
  /** Indices into labelNames, in label name order: the exposition order of pairs and series. */
  readonly #sorted: readonly number[];

  constructor(opts: MetricOptions<L>) {
    if (!METRIC_NAME.test(opts.name)) throw new Error(`invalid metric name ${JSON.stringify(opts.name)}`);
    for (const l of opts.labelNames ?? []) {
      if (!LABEL_NAME.test(l) || l.startsWith('__')) throw new Error(`${opts.name}: invalid label name ${JSON.stringify(l)}`);
    }
    if (new Set(opts.labelNames).size !== (opts.labelNames ?? []).length) throw new Error(`${opts.name}: duplicate label name`);
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames ?? [];
    this.#sorted = this.labelNames.map((_, i) => i).sort((a, b) => compareStrings(this.labelNames[a], this.labelNames[b]));
  }

  protected abstract initial(): S;
  protected abstract sample(values: readonly string[], state: S): string[];

  /** Forgets the series with these labels (e.g. an object that is gone). */
  remove(labels: Labels<L>): void {
    this.#series.delete(JSON.stringify(this.#values(labels)));
  }

  /** Forgets every series (an unlabelled metric returns to zero). */
  reset(): void {
    this.#series.clear();
  }

  protected series(labels: Labels<L>): S {
    const values = this.#values(labels);
    const key = JSON.stringify(values);
    let s = this.#series.get(key);
    if (s === undefined) {
      s = { values, state: this.initial() };
      this.#series.set(key, s);
    }
    return s.state;
  }

  /** @internal The family's exposition lines; none for a labelled family without series. */
  lines(): string[] {
    if (this.labelNames.length === 0) this.series({} as Labels<L>);
    if (this.#series.size === 0) return [];
    const all = [...this.#series.values()].sort((a, b) => compareValues(this.#sorted, a.values, b.values));
    return [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`, ...all.flatMap((s) => this.sample(s.values, s.state))];
  }

  protected labelText(values: readonly string[], extra?: readonly [string, string]): string {
    const pairs = this.#sorted.map((i) => `${this.labelNames[i]}="${escapeLabelValue(values[i])}"`);
    if (extra !== undefined) pairs.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
    return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
  }

  #values(labels: Labels<L>): string[] {
    const given: Readonly<Record<string, unknown>> = labels;
    const names: readonly string[] = this.labelNames;
    const unknown = Object.keys(given).filter((k) => !names.includes(k));
    const values = names.map((n) => given[n]);
    if (unknown.length > 0 || values.some((v) => typeof v !== 'string')) {
      throw new Error(`${this.name}: labels must be exactly {${names.join(', ')}} with string values, got ${JSON.stringify(labels)}`);
    }
    return values as string[];
  }
}

interface Value { v: number }

export interface CounterChild { inc(value?: number): void }

export class Counter<L extends string = never> extends Metric<L, Value> {
  readonly type = 'counter';
  protected initial(): Value { return { v: 0 }; }
  inc(labels: Labels<L>, value = 1): void {
    add(this.series(labels), value, this.name);
  }
  /** The series for `labels`, resolved once (for hot paths). */
  labels(labels: Labels<L>): CounterChild {
    const s = this.series(labels);
    return { inc: (value = 1) => add(s, value, this.name) };
  }
  get(labels: Labels<L>): number { return this.series(labels).v; }
  protected sample(values: readonly string[], s: Value): string[] {
    return [`${this.name}${this.labelText(values)} ${formatValue(s.v)}`];
  }
}

export interface GaugeChild { set(value: number): void; inc(value?: number): void; dec(value?: number): void }

export class Gauge<L extends string = never> extends Metric<L, Value> {
  readonly type = 'gauge';
  protected initial(): Value { return { v: 0 }; }
  set(labels: Labels<L>, value: number): void { this.series(labels).v = value; }
  inc(labels: Labels<L>, value = 1): void { this.series(labels).v += value; }
  dec(labels: Labels<L>, value = 1): void { this.series(labels).v -= value; }
  labels(labels: Labels<L>): GaugeChild {
    const s = this.series(labels);
    return { set: (v) => { s.v = v; }, inc: (v = 1) => { s.v += v; }, dec: (v = 1) => { s.v -= v; } };
  }
  get(labels: Labels<L>): number { return this.series(labels).v; }
  protected sample(values: readonly string[], s: Value): string[] {
    return [`${this.name}${this.labelText(values)} ${formatValue(s.v)}`];
  }
}

interface Buckets { readonly counts: number[]; sum: number; count: number }

export interface HistogramChild { observe(value: number): void }

export class Histogram<L extends string = never> extends Metric<L, Buckets> {
  readonly type = 'histogram';
  readonly buckets: readonly number[];

  constructor(opts: HistogramOptions<L>) {
    super(opts);
    if ((opts.labelNames as readonly string[] | undefined)?.includes('le')) throw new Error(`${opts.name}: "le" is reserved in histograms`);
    const buckets = (opts.buckets ?? DEFAULT_BUCKETS).filter((b) => b !== Infinity);
    if (buckets.some((b, i) => Number.isNaN(b) || (i > 0 && b <= buckets[i - 1]))) throw new Error(`${opts.name}: buckets must be ascending`);
    this.buckets = buckets;
  }

  protected initial(): Buckets { return { counts: this.buckets.map(() => 0), sum: 0, count: 0 }; }
  observe(labels: Labels<L>, value: number): void { this.#observe(this.series(labels), value); }
  labels(labels: Labels<L>): HistogramChild {
    const s = this.series(labels);
    return { observe: (v) => this.#observe(s, v) };
  }
  /** Count and sum of the series (tests, benchmarks). */
  get(labels: Labels<L>): { readonly count: number; readonly sum: number } {
    const { count, sum } = this.series(labels);
    return { count, sum };
  }

  #observe(s: Buckets, value: number): void {
    const i = this.buckets.findIndex((b) => value <= b);
    if (i >= 0) s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  protected sample(values: readonly string[], s: Buckets): string[] {
    let cumulative = 0;
    const lines = this.buckets.map((b, i) => {
      cumulative += s.counts[i];
      return `${this.name}_bucket${this.labelText(values, ['le', formatValue(b)])} ${cumulative}`;
    });
    lines.push(`${this.name}_bucket${this.labelText(values, ['le', '+Inf'])} ${s.count}`);
    lines.push(`${this.name}_sum${this.labelText(values)} ${formatValue(s.sum)}`);
    lines.push(`${this.name}_count${this.labelText(values)} ${s.count}`);
    return lines;
  }
}

type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;

export class Registry {
  readonly #metrics = new Map<string, AnyMetric>();
  readonly #collectHooks = new Set<() => void>();

  counter<L extends string = never>(opts: MetricOptions<L>): Counter<L> {
    return this.#register(new Counter<L>(opts));
  }

  gauge<L extends string = never>(opts: MetricOptions<L>): Gauge<L> {
    return this.#register(new Gauge<L>(opts));
  }

  histogram<L extends string = never>(opts: HistogramOptions<L>): Histogram<L> {
    return this.#register(new Histogram<L>(opts));
  }

  /** Runs `hook` before every exposition (to set gauges computed on demand); returns its unsubscribe. */
  onCollect(hook: () => void): () => void {
    // A wrapper per call, so subscribing one function twice and unsubscribing once stays correct.
    const entry = (): void => hook();
    this.#collectHooks.add(entry);
    return () => this.#collectHooks.delete(entry);
  }

  /** The text exposition of every metric (format 0.0.4). */
  metrics(): string {
    for (const hook of [...this.#collectHooks]) hook();
    const names = [...this.#metrics.keys()].sort(compareStrings);
    const lines = names.flatMap((n) => this.#metrics.get(n)?.lines() ?? []);
    return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
  }

  #register<M extends AnyMetric>(metric: M): M {
    // Histograms own name_bucket/_sum/_count, so those would collide as well.
    const taken = [metric.name, ...(metric.type === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => metric.name + s) : [])];
    for (const [name, other] of this.#metrics) {
      const owned = other.type === 'histogram' ? [name, `${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
      if (taken.some((t) => owned.includes(t))) throw new Error(`metric ${metric.name} collides with registered ${name}`);
    }
    this.#metrics.set(metric.name, metric);
    return metric;
  }
}

function add(s: Value, value: number, name: string): void {
  if (!(value >= 0)) throw new RangeError(`${name}: a counter only goes up, got ${value}`);
  s.v += value;
}

/** Go's formatting of special floats; JS number text otherwise (both parse alike). */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareValues(order: readonly number[], a: readonly string[], b: readonly string[]): number {
  for (const i of order) {
    const c = compareStrings(a[i], b[i]);
    if (c !== 0) return c;
  }
  return 0;
}
