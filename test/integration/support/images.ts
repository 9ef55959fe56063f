/*
 * The test images of this run, built (or found in the cache) once and shared by every test file
 * that needs them. A cold build takes minutes (the mysql root file system); a warm one seconds.
 */
import type { BuiltImage, ImageName } from '../../images/index.js';
import { ensureImages } from '../../images/index.js';

/** Bound on the hook that gets the images: a cold build of all three on 2 cores, with margin. */
export const SHARED_IMAGES_HOOK_TIMEOUT_MS = 20 * 60_000;

let shared: Promise<ReadonlyMap<ImageName, BuiltImage>> | undefined;

/** All the test images, by name. A failure is remembered: later callers fail at once with it. */
export function sharedImages(): Promise<ReadonlyMap<ImageName, BuiltImage>> {
  shared ??= ensureImages().then((images) => new Map(images.map((i) => [i.name, i])));
  return shared;
}
