/** One entry of `Status.details.causes` (e.g. the fields of a server-side apply conflict). */
export interface ApiErrorCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

/** What a failed Kubernetes API call said, whatever shape the error came in. */
export interface ApiErrorInfo {
  /** HTTP status code; 0 when no HTTP response was received (connection refused, TLS, abort, ...). */
  readonly code: number;
  /** `Status.reason` (`NotFound`, `Conflict`, `AlreadyExists`, `Expired`, `Gone`, `Invalid`, ...), or '' if none. */
  readonly reason: string;
  readonly message: string;
  /** `Status.details.causes`, [] if none. */
  readonly causes: readonly ApiErrorCause[];
  /** `Status.details.retryAfterSeconds` or the Retry-After header, if given. */
  readonly retryAfterSeconds?: number;
}

/** The subset of a `meta/v1 Status` we read. */
export interface StatusLike {
  readonly kind?: string;
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
  readonly details?: { readonly causes?: readonly ApiErrorCause[]; readonly retryAfterSeconds?: number };
}

/**
 * A non-2xx answer of the API server. Its shape (`code`, `body` as the Status JSON text, `headers`) is
 * client-node's `ApiException`, so that code written against either reads both.
 */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
    /** The response body: the `Status` as JSON text. */
    readonly body: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

/** KubeApiError, or client-node's ApiException (thrown by code that uses client-node's generated APIs). */
function isHttpError(
  e: unknown,
): e is { code: number; body: unknown; headers?: Record<string, string>; message: string } {
  return (
    e instanceof Error &&
    typeof (e as { code?: unknown }).code === 'number' &&
    'body' in e &&
    (e instanceof KubeApiError || e.constructor.name === 'ApiException')
  );
}

/**
 * Turns anything thrown by lib/kube, lib/informer or a client-node call into `{ code, reason, message,
 * causes }`. The body is raw JSON text (client-node sometimes gives an already-parsed object): both are
 * handled. Errors without an HTTP response get code 0 and their own message.
 */
export function apiError(e: unknown): ApiErrorInfo {
  if (isHttpError(e)) {
    const status = parseStatus(e.body);
    const headers = e.headers ?? {};
    const retryHeader = Number(headers['retry-after'] ?? headers['Retry-After']);
    const retryAfterSeconds =
      status?.details?.retryAfterSeconds ?? (Number.isFinite(retryHeader) && retryHeader > 0 ? retryHeader : undefined);
    return {
      code: e.code,
      reason: status?.reason ?? '',
      message: status?.message ?? firstLine(e.message),
      causes: status?.details?.causes ?? [],
      ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
    };
  }
  if (isStatusLike(e)) {
    return { code: e.code ?? 0, reason: e.reason ?? '', message: e.message ?? '', causes: e.details?.causes ?? [] };
  }
  const code =
    typeof (e as { statusCode?: unknown } | null)?.statusCode === 'number'
      ? (e as { statusCode: number }).statusCode
      : 0;
  const message = e instanceof Error ? describeError(e) : String(e);
  return { code, reason: '', message, causes: [] };
}

/** A `KubeApiError` carrying a `Status` object (used for watch ERROR events and raw requests). */
export function statusException(status: StatusLike, headers: Record<string, string> = {}): KubeApiError {
  const code = typeof status.code === 'number' ? status.code : 500;
  const said = status.message ?? status.reason ?? 'unknown';
  return new KubeApiError(code, `HTTP ${code}: ${said}`, JSON.stringify(status), headers);
}

export const isNotFound = (e: unknown): boolean => apiError(e).code === 404;
export const isConflict = (e: unknown): boolean => apiError(e).code === 409;
export const isAlreadyExists = (e: unknown): boolean => {
  const info = apiError(e);
  return info.code === 409 && info.reason === 'AlreadyExists';
};
/** 410 Gone / reason Expired: the resourceVersion (or continue token) is too old; relist. */
export const isGone = (e: unknown): boolean => {
  const info = apiError(e);
  return info.code === 410 || info.reason === 'Expired' || info.reason === 'Gone';
};

function parseStatus(body: unknown): StatusLike | undefined {
  if (typeof body === 'string') {
    try {
      const parsed: unknown = JSON.parse(body);
      return isStatusLike(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }
  return isStatusLike(body) ? body : undefined;
}

function isStatusLike(v: unknown): v is StatusLike {
  if (typeof v !== 'object' || v === null || v instanceof Error) return false;
  const o = v as Record<string, unknown>;
  return (
    o.kind === 'Status' ||
    (typeof o.code === 'number' && (typeof o.reason === 'string' || typeof o.message === 'string'))
  );
}

function firstLine(s: string): string {
  // client-node's message is "HTTP-Code: 409\nMessage: ...\nBody: <raw>\nHeaders: ..." — never log the body.
  const m = /Message: ([^\n]*)/.exec(s);
  return m?.[1] ?? s.split('\n')[0] ?? s;
}

// undici wraps the real cause ("fetch failed" → ECONNREFUSED); keep both, they are what an operator needs.
function describeError(e: Error): string {
  const cause = (e as { cause?: unknown }).cause;
  if (cause instanceof Error && cause.message && cause.message !== e.message) return `${e.message}: ${cause.message}`;
  return e.message;
}
