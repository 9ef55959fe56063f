/** Structured fields of a log line. Never put a secret value here. */
export type LogFields = Readonly<Record<string, unknown>>;

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A structured logger: one JSON object per line (time, level, msg, fields). */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Every level, least severe first. */
export const LOG_LEVELS = Object.keys(ORDER) as readonly LogLevel[];

/** Whether `value` names a log level (a flag's or an environment variable's text). */
export const isLogLevel = (value: string | undefined): value is LogLevel =>
  value !== undefined && Object.hasOwn(ORDER, value);

/** JSON lines to a stream (stderr by default), at `level` and above. */
export function jsonLogger(
  opts: { readonly level?: LogLevel; readonly write?: (line: string) => void; readonly fields?: LogFields } = {},
): Logger {
  const min = ORDER[opts.level ?? 'info'];
  const write = opts.write ?? ((line: string) => process.stderr.write(line));
  const base = opts.fields ?? {};
  const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
    if (ORDER[level] < min) return;
    write(
      `${JSON.stringify({ time: new Date().toISOString(), level, msg, ...base, ...(fields ? serializable(fields) : {}) })}\n`,
    );
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => jsonLogger({ ...opts, fields: { ...base, ...fields } }),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};

// Errors serialize to {} by default; keep their message (never a request body: it may hold a Secret).
function serializable(fields: LogFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = v instanceof Error ? { name: v.name, message: v.message } : v;
  return out;
}
