// An App's binding to a database of a MySQLCluster (spec.database): the names both sides agree on and
// what the App's pods get. The controller makes the account, the database and the grant, and writes
// the binding Secret; the App's Deployment only refers to them, so synth and the controller render
// the same Deployment without knowing the account's name or its password.
import type { k8s } from 'cdk8s-plus-28';
import { MYSQL_PORT, clusterNames } from '../mysql/layout.js';

/** Schemas MySQL keeps for itself: granting on them would hand the server, not a database, to the App. */
export const SYSTEM_SCHEMAS = ['mysql', 'sys', 'information_schema', 'performance_schema'] as const;

/**
 * A database name: letters, digits and "_", not starting with a digit, at most 64 characters (MySQL's
 * limit). Narrower than what MySQL accepts quoted: no name that needs quoting in a shell, an
 * environment variable or a hand-written statement.
 */
export const DATABASE_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';

/** What the App may do in its database. */
export const DATABASE_ACCESS = ['readWrite', 'readOnly'] as const;
export type DatabaseAccess = (typeof DATABASE_ACCESS)[number];

/** The keys of the binding Secret: the servicebinding.io shape (type, provider, host, port, ...). */
export const BINDING_SECRET_KEYS = {
  type: 'type',
  provider: 'provider',
  host: 'host',
  readHost: 'read-host',
  port: 'port',
  database: 'database',
  username: 'username',
  password: 'password',
  /** The CA certificate that verifies the cluster's members (PEM). */
  ca: 'ca',
} as const;

/**
 * A rotation's staged password in the binding Secret (`recon8s rotate-credentials app`): generated there
 * before MySQL is told, so that no crash loses a password the account holds; gone once switched in.
 */
export const PASSWORD_NEXT_KEY = 'password-next';

/** On the App: asks for a rotation of its database password (a token; a new token, a new rotation). */
export const ROTATE_CREDENTIALS_ANNOTATION = 'recon8s.dev/rotate-credentials';

/**
 * On the App (set by the controller) and its pod template (copied by render): the revision of the
 * password the pods are to start with, a hash of a rotation's token (never of a password). A new value
 * rolls the pods, which then read the switched Secret. On the binding Secret: the token of the rotation
 * whose password `password` holds.
 */
export const PASSWORD_REVISION_ANNOTATION = 'recon8s.dev/password-revision';

/** On the binding Secret: the token of the rotation `password-next` was staged for. */
export const PASSWORD_NEXT_REVISION_ANNOTATION = 'recon8s.dev/password-next-revision';

/** The environment the App's container gets from a binding (the user's env may not use these names). */
export const DATABASE_ENV = {
  host: 'DB_HOST',
  readHost: 'DB_READ_HOST',
  port: 'DB_PORT',
  name: 'DB_NAME',
  user: 'DB_USER',
  password: 'DB_PASSWORD',
  /** A file: the CA certificate to verify the server with (e.g. mysql --ssl-mode=VERIFY_IDENTITY --ssl-ca="$DB_SSL_CA"). */
  sslCa: 'DB_SSL_CA',
  bindingRoot: 'SERVICE_BINDING_ROOT',
} as const;
export const DATABASE_ENV_NAMES: readonly string[] = Object.values(DATABASE_ENV);

/** Where the binding Secret is mounted: `$SERVICE_BINDING_ROOT/<binding>` (servicebinding.io workload projection). */
export const SERVICE_BINDING_ROOT = '/bindings';
export const BINDING_NAME = 'database';
const BINDING_VOLUME = 'database-binding';

/**
 * The Secret the controller writes for an App's binding (owned by the App): the generated password and
 * everything a binding-aware framework needs. `<app>-db`.
 */
export function databaseBindingSecretName(app: string): string {
  return `${app}-db`;
}

/** spec.database as the construct reads it. */
export interface DatabaseBindingSpec {
  readonly cluster: string;
  readonly name: string;
  readonly access: string;
}

/** The container's environment for a binding: hosts and names as values, the account from the Secret. */
export function databaseEnv(app: string, binding: DatabaseBindingSpec): k8s.EnvVar[] {
  const names = clusterNames(binding.cluster);
  const secret = databaseBindingSecretName(app);
  const fromSecret = (key: string): k8s.EnvVarSource => ({ secretKeyRef: { name: secret, key } });
  return [
    { name: DATABASE_ENV.host, value: names.primaryService },
    { name: DATABASE_ENV.readHost, value: names.replicasService },
    { name: DATABASE_ENV.port, value: String(MYSQL_PORT) },
    { name: DATABASE_ENV.name, value: binding.name },
    { name: DATABASE_ENV.user, valueFrom: fromSecret(BINDING_SECRET_KEYS.username) },
    { name: DATABASE_ENV.password, valueFrom: fromSecret(BINDING_SECRET_KEYS.password) },
    {
      name: DATABASE_ENV.sslCa,
      value: `${SERVICE_BINDING_ROOT}/${BINDING_NAME}/${BINDING_SECRET_KEYS.ca}`,
    },
    { name: DATABASE_ENV.bindingRoot, value: SERVICE_BINDING_ROOT },
  ];
}

/**
 * The binding Secret as a volume. The files keep the default mode: they belong to root, and an owner-only
 * mode would hide them from the container's own non-root uid unless the pod sets an fsGroup.
 */
export function databaseVolume(app: string): k8s.Volume {
  return { name: BINDING_VOLUME, secret: { secretName: databaseBindingSecretName(app) } };
}

export function databaseVolumeMount(): k8s.VolumeMount {
  return { name: BINDING_VOLUME, mountPath: `${SERVICE_BINDING_ROOT}/${BINDING_NAME}`, readOnly: true };
}
