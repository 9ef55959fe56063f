import { randomBytes } from 'node:crypto';

/** Keys of the MySQL credentials Secret that the workloads read. */
export const CREDENTIAL_KEYS = ['root-password', 'replication-password'] as const;

/** Marks a Secret recon8s generated (and so may own); a user's Secret never carries it. */
export const GENERATED_BY_LABEL = 'recon8s.dev/generated-for';

export type CredentialsState =
  | { readonly state: 'ready'; readonly secretName: string }
  | { readonly state: 'created'; readonly secretName: string }
  | { readonly state: 'missing'; readonly secretName: string; readonly message: string }
  | { readonly state: 'incomplete'; readonly secretName: string; readonly message: string }
  | { readonly state: 'forbidden'; readonly secretName: string; readonly message: string };

/** A strong random password: 32 characters of base64url (192 bits), safe in my.cnf and shells. */
export function generatePassword(): string {
  return randomBytes(24).toString('base64url');
}

/** Which required keys a Secret's data lacks (never looks at the values beyond presence). */
export function missingKeys(data: Readonly<Record<string, string>> | undefined): string[] {
  return CREDENTIAL_KEYS.filter((k) => !data?.[k]);
}
