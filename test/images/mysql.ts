/*
 * The mysql image: Debian sid's MySQL 9.7 in a minimal root laid out like the official mysql:9.7
 * image (mysql/build-rootfs.sh), so that MySQLCluster pods run it unchanged through spec.image.
 * The unpacked root stays in the cache as well (mysqlRootfs()): tests can run the real mysqld in it
 * with chroot, without a node.
 */
import { join } from 'node:path';
import { cachedBuild, contentKey } from './cache.js';
import { DEFAULT_PATH, writeArchive, writeLayer } from './oci.js';
import type { BuildLog, BuiltImage } from './recipe.js';
import { IMAGES_DIR, SHARED_RECIPE_FILES, recipeFiles, seconds } from './recipe.js';
import { runCommand } from './run.js';

export const MYSQL_SERIES = '9.7';
export const MYSQL_REF = `recon8s.test/mysql:${MYSQL_SERIES}`;
/**
 * The official image's name (what a MySQLCluster of this version runs by default): the project's node
 * has this image under it too, standing in for the official one (no registry is reachable), so that
 * the README's example runs there as written. Debian's build of the same series, laid out alike.
 */
export const MYSQL_OFFICIAL_REF = `docker.io/library/mysql:${MYSQL_SERIES}`;
/** The mysql user and group of the image, as in the official one. */
export const MYSQL_IMAGE_UID = 999;

const ROOTFS_SCRIPT = 'mysql/build-rootfs.sh';

async function rootfsKey(): Promise<string> {
  return contentKey({ ...(await recipeFiles([ROOTFS_SCRIPT])), series: MYSQL_SERIES });
}

/**
 * The unpacked root file system of the mysql image (built once, as root; how long: see test/README.md,
 * What a run costs). Treat it as read-only: it is shared by every run and checkout. To run mysqld in
 * it, bind-mount a data directory of your own over /var/lib/mysql and a run directory over
 * /var/run/mysqld.
 */
export async function mysqlRootfs(log: BuildLog = quietLog()): Promise<string> {
  const { dir, builtInMs } = await cachedBuild({
    name: 'mysql-rootfs',
    key: await rootfsKey(),
    log: log.info,
    build: async (d) => {
      log.info(
        `mysql: building the root file system (debootstrap Debian sid + mysql-server-core ${MYSQL_SERIES}; first time only; test/README.md has the measured time)`,
      );
      await runCommand('bash', [join(IMAGES_DIR, ROOTFS_SCRIPT), join(d, 'rootfs')], { onOutput: log.detail });
    },
  });
  if (builtInMs !== undefined) log.info(`mysql: root file system built in ${seconds(builtInMs)}`);
  return join(dir, 'rootfs');
}

export async function buildMysqlImage(log: BuildLog): Promise<BuiltImage> {
  const rootfs = await mysqlRootfs(log);
  const key = contentKey({ ...(await recipeFiles(['mysql.ts', ...SHARED_RECIPE_FILES])), rootfs: await rootfsKey() });
  const { dir, builtInMs } = await cachedBuild({
    name: 'mysql',
    key,
    log: log.info,
    build: async (d) => {
      const layer = join(d, 'layer.tar');
      await writeLayer(rootfs, layer, { keepOwners: true });
      await writeArchive({
        layer,
        out: join(d, 'image.tar'),
        images: [
          {
            refs: [MYSQL_REF, MYSQL_OFFICIAL_REF],
            config: {
              // Non-root by default; the pods say so themselves too (runAsUser 999).
              user: `${MYSQL_IMAGE_UID}:${MYSQL_IMAGE_UID}`,
              cmd: ['mysqld'],
              env: [DEFAULT_PATH],
              workingDir: '/',
              exposedPorts: ['3306/tcp', '33060/tcp'],
            },
          },
        ],
      });
    },
  });
  if (builtInMs !== undefined) log.info(`mysql: image ${MYSQL_REF} written in ${seconds(builtInMs)}`);
  return { name: 'mysql', ref: MYSQL_REF, refs: [MYSQL_REF, MYSQL_OFFICIAL_REF], archive: join(dir, 'image.tar') };
}

function quietLog(): BuildLog {
  return { info: (line) => console.error(line), detail: () => undefined };
}
