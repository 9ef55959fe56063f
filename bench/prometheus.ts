/** One series of a Prometheus text exposition. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/**
 * Parses the Prometheus text format (0.0.4): `name{label="value",...} value [timestamp]`. Comments and
 * series whose name `keep` rejects are skipped.
 */
export function parsePrometheus(text: string, keep: (name: string) => boolean = () => true): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    const nameEnd = brace >= 0 && (space < 0 || brace < space) ? brace : space;
    if (nameEnd <= 0) continue;
    const name = line.slice(0, nameEnd);
    if (!keep(name)) continue;
    let labels: Record<string, string> = {};
    let rest = line.slice(nameEnd);
    if (rest.startsWith('{')) {
      const parsed = parseLabels(rest);
      labels = parsed.labels;
      rest = rest.slice(parsed.end);
    }
    const valueText = rest.trim().split(/\s+/)[0] ?? '';
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    if (Number.isNaN(value) && valueText !== 'NaN') continue;
    out.push({ name, labels, value });
  }
  return out;
}

// `{a="x",b="y\"z"}` → labels, and the index just past the closing brace.
function parseLabels(s: string): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = 1;
  while (i < s.length && s[i] !== '}') {
    const eq = s.indexOf('=', i);
    if (eq < 0) break;
    const key = s.slice(i, eq).trim().replace(/^,/, '').trim();
    i = eq + 1;
    if (s[i] !== '"') break;
    i++;
    let value = '';
    while (i < s.length && s[i] !== '"') {
      if (s[i] === '\\' && i + 1 < s.length) {
        const next = s[i + 1];
        value += next === 'n' ? '\n' : next;
        i += 2;
      } else {
        value += s[i];
        i++;
      }
    }
    i++; // closing quote
    labels[key] = value;
    if (s[i] === ',') i++;
  }
  return { labels, end: i + 1 };
}

function seriesKey(s: Sample): string {
  return `${s.name}{${Object.keys(s.labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(s.labels[k])}`)
    .join(',')}}`;
}

/** after − before, series by series (a series absent before counts from 0). Only counters make sense here. */
export function diffSamples(after: readonly Sample[], before: readonly Sample[]): Sample[] {
  const prior = new Map(before.map((s) => [seriesKey(s), s.value]));
  return after.map((s) => ({ ...s, value: s.value - (prior.get(seriesKey(s)) ?? 0) }));
}

type LabelFilter = (labels: Readonly<Record<string, string>>) => boolean;

/** The sum of every series of `name` that passes `filter`. */
export function total(samples: readonly Sample[], name: string, filter: LabelFilter = () => true): number {
  let sum = 0;
  for (const s of samples) if (s.name === name && filter(s.labels)) sum += s.value;
  return sum;
}

/** Sums of the series of `name`, grouped by the values of `by` (joined with " "), zeros left out. */
export function totalBy(
  samples: readonly Sample[],
  name: string,
  by: readonly string[],
  filter: LabelFilter = () => true,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== name || !filter(s.labels)) continue;
    const key = by.map((b) => s.labels[b] ?? '').join(' ');
    out[key] = (out[key] ?? 0) + s.value;
  }
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== 0));
}
