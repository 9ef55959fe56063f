// The two ConfigMaps of a cluster: my.cnf, and the scripts. Separate, so that a look at the
// configuration is not buried in shell.
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import type { MySQLClusterContext } from './context.js';
import { objectMeta } from './context.js';
import { DATABASE_COMPONENT } from './layout.js';
import { renderMyCnf } from './my-cnf.js';
import { EXPORTER_CNF_KEY, exporterCnf } from './exporter.js';
import { SCRIPT, scriptFiles } from './scripts.js';
import type { ScriptName } from './scripts.generated.js';

export const MY_CNF_KEY = 'my.cnf';

/** Scripts only jobs run (backup, archive, listing, search, verification): never the database pods'. */
const JOB_SCRIPTS: ReadonlySet<string> = new Set<ScriptName>([
  SCRIPT.backup,
  SCRIPT.binlog,
  SCRIPT.listBackups,
  SCRIPT.findBinlog,
  'binlog-filter.sh',
  SCRIPT.verifyBackup,
]);

export interface MySQLConfigMaps {
  readonly config: k8s.KubeConfigMap;
  readonly scripts: k8s.KubeConfigMap;
  /** Changes whenever anything the database pods read from either ConfigMap changes (the backup,
   * binary-log, listing and search scripts are their jobs' business: a change to them must not restart the database). */
  readonly hash: string;
}

export function configMaps(scope: Construct, ctx: MySQLClusterContext): MySQLConfigMaps {
  const myCnf = renderMyCnf(ctx.names.cluster, ctx.spec.mysqlConf);
  const scripts = scriptFiles();
  return {
    config: new k8s.KubeConfigMap(scope, 'Config', {
      metadata: objectMeta(ctx, ctx.names.config, DATABASE_COMPONENT),
      data: { [MY_CNF_KEY]: myCnf, ...(ctx.spec.monitoring.enabled ? { [EXPORTER_CNF_KEY]: exporterCnf() } : {}) },
    }),
    scripts: new k8s.KubeConfigMap(scope, 'Scripts', {
      metadata: objectMeta(ctx, ctx.names.scripts, DATABASE_COMPONENT),
      data: scripts,
    }),
    hash: fnv1a32(
      [
        myCnf,
        ...Object.keys(scripts)
          .filter((k) => !JOB_SCRIPTS.has(k))
          .sort()
          .map((k) => `${k}\0${scripts[k]}`),
      ].join('\0'),
    ),
  };
}

/**
 * FNV-1a, 32 bits, of the UTF-8 bytes, as 8 hex digits. A change detector for a pod template
 * annotation (a ConfigMap change alone restarts nothing; a changed template rolls the pods), not a
 * security measure, and deterministic without any library.
 */
export function fnv1a32(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}
