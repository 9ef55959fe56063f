// What a MySQLCluster's prepare() learns and hands to observe() and the manager (Preparation.facts).

/** The Secret holding the passwords. */
export const SECRET_FACT = 'credentialsSecretName';
/** The Secret holding the members' certificate. */
export const TLS_SECRET_FACT = 'tlsSecretName';
/** The CA certificate (PEM, public) every member's certificate must be signed by. */
export const TLS_CA_FACT = 'tlsCa';
/** When the members' current certificate expires (ISO 8601). */
export const TLS_NOT_AFTER_FACT = 'tlsNotAfter';
