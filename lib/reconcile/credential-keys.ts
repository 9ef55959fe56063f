import { randomBytes } from 'node:crypto';
import { MYSQL_SECRET_KEYS } from '../../constructs/index.js';

/** Keys of the MySQL credentials Secret that the workloads always read. */
export const CREDENTIAL_KEYS = [
  MYSQL_SECRET_KEYS.rootPassword,
  MYSQL_SECRET_KEYS.replicationPassword,
  MYSQL_SECRET_KEYS.adminPassword,
  MYSQL_SECRET_KEYS.clonePassword,
  MYSQL_SECRET_KEYS.backupPassword,
] as const;

/**
 * Every key a generated Secret gets: also the metrics sidecar's password, so that turning
 * spec.monitoring on later needs nothing more. A user's Secret needs it only with monitoring on.
 */
export const GENERATED_KEYS = [...CREDENTIAL_KEYS, MYSQL_SECRET_KEYS.exporterPassword] as const;

/** The keys a cluster's Secret must have: the exporter's only when spec.monitoring.enabled. */
export function requiredKeys(monitoring: boolean): readonly string[] {
  return monitoring ? GENERATED_KEYS : CREDENTIAL_KEYS;
}

/** Marks a Secret recon8s generated (and so may own); a user's Secret never carries it. */
export const GENERATED_BY_LABEL = 'recon8s.dev/generated-for';

export type CredentialsState =
  | { readonly state: 'ready'; readonly secretName: string }
  | { readonly state: 'created'; readonly secretName: string }
  | { readonly state: 'missing'; readonly secretName: string; readonly message: string }
  | { readonly state: 'incomplete'; readonly secretName: string; readonly message: string }
  | { readonly state: 'forbidden'; readonly secretName: string; readonly message: string }
  | { readonly state: 'invalid'; readonly secretName: string; readonly message: string };

/**
 * MySQL refuses a replication password longer than this (CHANGE REPLICATION SOURCE TO ... SOURCE_PASSWORD,
 * ERROR 3056): a longer one leaves every replica unable to connect, for ever.
 */
export const MAX_REPLICATION_PASSWORD_LENGTH = 32;

/**
 * What is wrong with the passwords, in words that never show them: a replication password MySQL would
 * refuse. `data` is the Secret's base64 data, as the API returns it.
 */
export function credentialsProblem(secretName: string, data: Readonly<Record<string, string>>): string | undefined {
  const replication = data[MYSQL_SECRET_KEYS.replicationPassword];
  if (replication === undefined) return undefined;
  const length = Buffer.from(replication, 'base64').toString('utf8').length;
  if (length <= MAX_REPLICATION_PASSWORD_LENGTH) return undefined;
  return `Secret ${secretName} key ${MYSQL_SECRET_KEYS.replicationPassword} is longer than ${MAX_REPLICATION_PASSWORD_LENGTH} characters, the most MySQL accepts for a replication password (replicas could never connect); set a shorter one`;
}

/** A strong random password: 32 characters of base64url (192 bits), safe in my.cnf and shells. */
export function generatePassword(): string {
  return randomBytes(24).toString('base64url');
}

/** Which of `keys` a Secret's data lacks (never looks at the values beyond presence). */
export function missingKeys(
  data: Readonly<Record<string, string>> | undefined,
  keys: readonly string[] = CREDENTIAL_KEYS,
): string[] {
  return keys.filter((k) => !data?.[k]);
}
