// Writes what is generated (npm run codegen): from the spec definitions, the props types and the spec
// reference in docs/reference/; from the shell scripts, layout.sh beside them and the module that holds
// their text for the construct. Unit tests fail while any is stale.
import { writeFileSync } from 'node:fs';
import {
  generatedReference,
  generatedScriptLayout,
  generatedScriptSources,
  generatedSpecTypes,
} from '../constructs/generated-sources.js';
import { readScriptSources } from './script-sources.js';

const write = ({ path, text }: { path: string; text: string }): void => {
  writeFileSync(new URL(`../${path}`, import.meta.url), text);
  console.log(`wrote ${path}`);
};
[...generatedSpecTypes(), ...generatedReference(), generatedScriptLayout()].forEach(write);
// After layout.sh, which the scripts' module leaves out (the construct renders it).
write(generatedScriptSources(readScriptSources()));
