// What a MySQLCluster's prepare() learns and hands to observe() and the manager (Preparation.facts).

export interface MySQLClusterFacts {
  /** The Secret holding the passwords. */
  readonly credentialsSecretName: string;
  /** The Secret holding the members' certificate. */
  readonly tlsSecretName: string;
  /** The members' certificate, once the TLS Secret holds a usable one. */
  readonly tls?: {
    /** The CA certificate (PEM, public) every member's certificate must be signed by. */
    readonly caPem: string;
    /** When the members' current certificate expires (ISO 8601). */
    readonly notAfter: string;
  };
}
