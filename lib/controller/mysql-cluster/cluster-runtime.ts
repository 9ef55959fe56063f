// Everything the controller remembers of one MySQLCluster between its reconciles, in one object per
// cluster: the HA loop's memory (its sessions to the members among it), the Apps' accounts' and the
// credential rotation's passes, the backup schedule's series. Created at the cluster's first manage()
// and dropped when it is forgotten, in one place (ClusterRuntimes); a new term of leadership starts
// with none (the manager, and with it every runtime, is created per term).
import type { AppAccounts, AppAccountsOptions } from './app-accounts.js';
import { createAppAccounts } from './app-accounts.js';
import { BackupIntervalSeries } from './backup-schedule.js';
import type { ClusterRotation, ClusterRotationOptions } from './credential-rotation-loop.js';
import { createClusterRotation } from './credential-rotation-loop.js';
import { HaMemory } from './ha/memory.js';

/** How a runtime's passes reach what they act on (tests fake them). */
export interface ClusterRuntimeOptions {
  readonly accounts?: AppAccountsOptions;
  readonly rotation?: ClusterRotationOptions;
}

export class ClusterRuntime {
  /** What the HA loop remembers (ha/memory.ts). */
  readonly ha = new HaMemory();
  /** The bound Apps' accounts, made on the primary (app-accounts.ts). */
  readonly accounts: AppAccounts;
  /** The rotation of the cluster's own accounts (credential-rotation-loop.ts). */
  readonly rotation: ClusterRotation;
  /** recon8s_mysql_backup_schedule_max_interval_seconds (backup-schedule.ts). */
  readonly backupInterval = new BackupIntervalSeries();

  constructor(o: ClusterRuntimeOptions = {}) {
    this.accounts = createAppAccounts(o.accounts);
    this.rotation = createClusterRotation(o.rotation);
  }

  /** The term of leadership ends: what is kept open (the members' sessions) ends. */
  close(): void {
    this.ha.close();
  }

  /** The cluster is gone: what is kept open ends, and its series go. */
  drop(): void {
    this.close();
    this.backupInterval.remove();
  }
}

/** The runtimes of the clusters one manager (one term of leadership) manages, by uid. */
export class ClusterRuntimes {
  readonly #byUid = new Map<string, ClusterRuntime>();

  constructor(private readonly options: ClusterRuntimeOptions = {}) {}

  /** The cluster's runtime, created at its first pass. */
  of(uid: string): ClusterRuntime {
    let runtime = this.#byUid.get(uid);
    if (!runtime) {
      runtime = new ClusterRuntime(this.options);
      this.#byUid.set(uid, runtime);
    }
    return runtime;
  }

  /** The cluster's runtime if it has one (a cluster not managed yet remembers nothing). */
  find(uid: string): ClusterRuntime | undefined {
    return this.#byUid.get(uid);
  }

  /** The object `uid` is gone: if it was a cluster, everything remembered of it goes. */
  forget(uid: string): void {
    this.#byUid.get(uid)?.drop();
    this.#byUid.delete(uid);
  }

  /** The term of leadership ends, or the process stops. */
  close(): void {
    for (const runtime of this.#byUid.values()) runtime.close();
  }
}
