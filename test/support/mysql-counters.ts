// What MySQL counts, as the tests on real mysqld (the sandbox and the real node) read it.

/**
 * Logins the server refused (ER_ACCESS_DENIED_ERROR raised), since it started. Unlike Aborted_connects,
 * it does not count a client that gave up during the handshake (a connect timeout on a loaded machine).
 */
export const REFUSED_LOGINS_SQL =
  "SELECT SUM_ERROR_RAISED FROM performance_schema.events_errors_summary_global_by_error WHERE ERROR_NAME = 'ER_ACCESS_DENIED_ERROR'";
