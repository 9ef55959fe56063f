// The shell scripts' source files as generatedScriptSources() takes them, read by npm run codegen and by
// the unit test that checks what it wrote.
import { readFileSync, readdirSync } from 'node:fs';
import { SCRIPTS_DIR } from '../constructs/generated-sources.js';

/** The .sh files of constructs/mysql/scripts/, by file name. */
export function readScriptSources(): Record<string, string> {
  const dir = new URL(`../${SCRIPTS_DIR}/`, import.meta.url);
  return Object.fromEntries(
    readdirSync(dir)
      .filter((name) => name.endsWith('.sh'))
      .map((name) => [name, readFileSync(new URL(name, dir), 'utf8')]),
  );
}
