/*
 * The container images of the real-node tests, built locally (no registry, no Docker) into the
 * per-user cache and reused until their recipe changes: see README.md (this directory's).
 *
 *   const images = await ensureImages();   // all three; how long, cold and warm: test/README.md
 *   for (const i of images) ctr -n k8s.io images import i.archive   // tags i.refs
 */
import { buildMysqlImage } from './mysql.js';
import { buildOperatorImage } from './operator.js';
import { buildPauseImage } from './pause.js';
import type { BuildLog, BuiltImage, ImageName } from './recipe.js';
import { seconds } from './recipe.js';
import { buildWebImage } from './web.js';

export type { BuiltImage, ImageName } from './recipe.js';
export { imagesCacheDir } from './cache.js';
export { MYSQL_IMAGE_UID, MYSQL_REF, MYSQL_SERIES, mysqlRootfs } from './mysql.js';
export { OPERATOR_REF, OPERATOR_REFS } from './operator.js';
export { PAUSE_REF } from './pause.js';
export { WEB_PORT, WEB_REFS, WEB_UID, WEB_VERSIONS, webBody } from './web.js';

/** The images workloads run; the node's own sandbox image (`pause`) is asked for by name. */
export const IMAGE_NAMES: readonly ImageName[] = ['mysql', 'web', 'operator'];

const BUILDERS: Record<ImageName, (log: BuildLog) => Promise<BuiltImage>> = {
  mysql: buildMysqlImage,
  web: buildWebImage,
  operator: buildOperatorImage,
  pause: buildPauseImage,
};

export interface EnsureImagesOptions {
  /** Only these images (default: all). */
  readonly only?: readonly ImageName[];
  /** Every line of progress and of the builders' output. Default: progress to stderr, builder output dropped. */
  readonly onOutput?: (line: string) => void;
}

/**
 * Builds what is missing from the cache, in parallel (the mysql root file system downloads while Go
 * compiles), and returns the archives in the order asked. Concurrent callers, in this process or
 * others, wait for one build of each image.
 */
export async function ensureImages(options: EnsureImagesOptions = {}): Promise<BuiltImage[]> {
  const names = options.only ?? IMAGE_NAMES;
  const log: BuildLog = options.onOutput
    ? { info: options.onOutput, detail: options.onOutput }
    : { info: (line) => console.error(line), detail: () => undefined };
  const started = Date.now();
  const results = await Promise.allSettled(names.map((n) => BUILDERS[n](log)));
  const failed = results.flatMap((r, i) =>
    r.status === 'rejected' ? [`${names[i]}: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`] : [],
  );
  if (failed.length > 0) throw new Error(`Could not build the test images:\n${failed.join('\n')}`);
  const elapsed = Date.now() - started;
  if (elapsed > 5000) log.info(`images: ${names.join(', ')} ready in ${seconds(elapsed)}`);
  return results.map((r) => (r as PromiseFulfilledResult<BuiltImage>).value);
}
