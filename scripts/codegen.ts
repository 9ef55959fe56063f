// Writes what is generated from the spec definitions (npm run codegen): the props types and the
// README's spec reference. Unit tests fail while either is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { generatedSpecTypes, withReference } from '../constructs/generated-sources.js';

for (const { path, text } of generatedSpecTypes()) {
  writeFileSync(new URL(`../${path}`, import.meta.url), text);
  console.log(`wrote ${path}`);
}
const readme = new URL('../README.md', import.meta.url);
writeFileSync(readme, withReference(readFileSync(readme, 'utf8')));
console.log('updated the reference in README.md');
