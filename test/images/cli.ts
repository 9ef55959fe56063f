/*
 * Builds the test images by hand (what the tests and the node do on their own):
 *
 *   npx tsx test/images/cli.ts [mysql|web|operator]...   build what is missing; prints "<name> <archive> <refs>"
 *   npx tsx test/images/cli.ts --mysql-rootfs             the unpacked mysql root file system
 *
 * Then e.g. `ctr -n k8s.io images import <archive>`. Progress goes to stderr, results to stdout.
 */
import type { ImageName } from './index.js';
import { IMAGE_NAMES, ensureImages, mysqlRootfs } from './index.js';

async function main(args: readonly string[]): Promise<void> {
  if (args.includes('--mysql-rootfs')) {
    console.log(await mysqlRootfs());
    return;
  }
  const unknown = args.filter((a) => !(IMAGE_NAMES as readonly string[]).includes(a));
  if (unknown.length > 0)
    throw new Error(`unknown image ${unknown.join(', ')}: expected ${IMAGE_NAMES.join(', ')} or --mysql-rootfs`);
  const only = args.length > 0 ? (args as readonly ImageName[]) : undefined;
  for (const image of await ensureImages({ only, onOutput: (line) => console.error(line) })) {
    console.log(`${image.name} ${image.archive} ${image.refs.join(',')}`);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exitCode = 1;
});
