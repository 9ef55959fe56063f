// The cluster's passwords, as the agent reads them: from the credentials Secret mounted as files, each
// time it uses one. The kubelet updates the files some time after the Secret changes (a rotation,
// `recon8s rotate-credentials mysqlcluster`); an environment variable would keep the value of the
// container's start, and the agent would log in with, or set, a password the cluster has moved on from.
// Never logged: only the revision (a rotation's token) is ever said.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { CREDENTIALS_REVISION_KEY, INITIAL_CREDENTIALS_REVISION, SECRET_KEYS } from '../../constructs/mysql-member.js';

export interface ClusterCredentials {
  /** The rotation whose passwords these are (INITIAL_CREDENTIALS_REVISION before the first). */
  readonly revision: string;
  readonly root: string;
  readonly replication: string;
  readonly admin: string;
  readonly clone: string;
  readonly backup: string;
  /** Only when asked for (spec.monitoring), and present. */
  readonly exporter?: string;
}

export class CredentialsError extends Error {}

/**
 * One consistent reading of the mounted Secret. The kubelet writes a new version beside the old one and
 * swaps the `..data` link to it: the files are read through that link resolved once, so that the
 * revision and the passwords are of the same version. (A directory without it, as the sandbox has, is
 * read as it is.)
 */
export function readCredentials(dir: string, exporter = false): ClusterCredentials {
  const link = join(dir, '..data');
  const base = existsSync(link) ? realpathSync(link) : dir;
  const read = (key: string): string | undefined => {
    try {
      return readFileSync(join(base, key), 'utf8');
    } catch {
      return undefined;
    }
  };
  const required = (key: string): string => {
    const v = read(key);
    if (!v) throw new CredentialsError(`the credentials Secret mounted at ${dir} has no ${key}`);
    return v;
  };
  const exporterPassword = exporter ? read(SECRET_KEYS.exporterPassword) : undefined;
  return {
    revision: read(CREDENTIALS_REVISION_KEY)?.trim() || INITIAL_CREDENTIALS_REVISION,
    root: required(SECRET_KEYS.rootPassword),
    replication: required(SECRET_KEYS.replicationPassword),
    admin: required(SECRET_KEYS.adminPassword),
    clone: required(SECRET_KEYS.clonePassword),
    backup: required(SECRET_KEYS.backupPassword),
    ...(exporterPassword ? { exporter: exporterPassword } : {}),
  };
}
