/*
 * What every image recipe shares: the result type, the log, and reading the recipe's own files
 * into its cache key (a recipe that changes is a new image).
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type ImageName = 'mysql' | 'web' | 'operator' | 'pause';

export interface BuiltImage {
  readonly name: ImageName;
  /** The reference the archive is imported as (its first, when it carries several). */
  readonly ref: string;
  /** Every reference the archive carries: `ctr -n k8s.io images import` creates each one. */
  readonly refs: readonly string[];
  /** The OCI archive, for `ctr -n k8s.io images import <archive>`. */
  readonly archive: string;
}

/** test/images/ */
export const IMAGES_DIR = dirname(fileURLToPath(import.meta.url));

/** The files of this directory that every image's archive depends on: the OCI writer (how the cache
 * stores an image does not change the image, so cache.ts is not one of them). */
export const SHARED_RECIPE_FILES = ['oci.ts'] as const;

/** The contents of recipe files (paths relative to test/images/), keyed by path, for contentKey(). */
export async function recipeFiles(paths: readonly string[]): Promise<Record<string, Buffer>> {
  const out: Record<string, Buffer> = {};
  for (const p of paths) out[`file:${p}`] = await readFile(join(IMAGES_DIR, p));
  return out;
}

/** Messages about a build; `detail` is the builders' own output (apt, go, npm). */
export interface BuildLog {
  readonly info: (line: string) => void;
  readonly detail: (line: string) => void;
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
