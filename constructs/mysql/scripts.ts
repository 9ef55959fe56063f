// The shell scripts that run in the database pods, shipped in the scripts ConfigMap and run with the
// image's bash: only what must run inside the MySQL image before or beside mysqld's own files
// (init-config, bootstrap, start-mysqld, the preStop hook pre-stop) and the backup, archive and restore
// jobs. What runs for the pod's life beside mysqld (probes, accounts, self-fencing, re-provisioning) is
// the agent, in TypeScript (lib/agent).
//
// Their source is constructs/mysql/scripts/*.sh, checked by shellcheck in npm run lint; the rules every
// one of them follows are at the top of scripts/common.sh. The constructs read no file, so npm run
// codegen copies the scripts' text into scripts.generated.ts (a unit test fails while it is stale),
// and what they take from the TypeScript (paths, ports, accounts, report reasons) reaches them as the
// shell variables of layout.sh (script-layout.ts).
import { LAYOUT_SH, layoutSh } from './script-layout.js';
import type { ScriptName } from './scripts.generated.js';
import { SCRIPT_SOURCES } from './scripts.generated.js';

/** File names of the scripts the containers run. */
export const SCRIPT = {
  backup: 'backup.sh',
  binlog: 'binlog.sh',
  bootstrap: 'bootstrap.sh',
  findBinlog: 'find-binlog.sh',
  initConfig: 'init-config.sh',
  listBackups: 'list-backups.sh',
  preStop: 'pre-stop.sh',
  startMysqld: 'start-mysqld.sh',
  verifyBackup: 'verify-backup.sh',
} as const satisfies Record<string, ScriptName>;

/** Every script, by file name, as the scripts ConfigMap ships them. */
export function scriptFiles(): Record<string, string> {
  return { ...SCRIPT_SOURCES, [LAYOUT_SH]: layoutSh() };
}
