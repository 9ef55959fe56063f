// Writes what is generated from the spec definitions (npm run codegen): the props types and the
// spec reference in docs/reference/. Unit tests fail while either is stale.
import { writeFileSync } from 'node:fs';
import { generatedReference, generatedSpecTypes } from '../constructs/generated-sources.js';

for (const { path, text } of [...generatedSpecTypes(), ...generatedReference()]) {
  writeFileSync(new URL(`../${path}`, import.meta.url), text);
  console.log(`wrote ${path}`);
}
