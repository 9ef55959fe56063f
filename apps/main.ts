// The cdk8s app that `cdk8s synth` runs (cdk8s.yaml), into dist/:
// - crds.k8s.yaml and example.k8s.yaml: the CRDs and the example infrastructure (examples.ts);
// - install.yaml: the operator's whole install, CRDs included (`kubectl apply -f dist/install.yaml`),
//   from the OperatorChart construct, with props from the environment (operator-env.ts).
// - helm/recon8s/: the same install as a Helm chart, generated from the same construct (helm-chart.ts).
// `cdk8s synth --output X` empties X and runs this with CDK8S_OUTDIR=X; run directly, it writes to dist/.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { App } from 'cdk8s';
import { OperatorChart } from '../constructs/index.js';
import { CrdsChart, ExampleChart } from './examples.js';
import { helmChart } from './helm-chart.js';
import { installFileHeader, operatorPropsFromEnv } from './operator-env.js';

const outdir = process.env.CDK8S_OUTDIR ?? 'dist';

const app = new App({ outdir });
new CrdsChart(app, 'crds');
new ExampleChart(app, 'example', { namespace: 'example' });
app.synth();

// One file named install.yaml: a chart "install" with the plain .yaml extension. It opens with a comment
// naming the namespaces that must exist before it is applied (operator-env.ts says why it never creates them).
const install = new App({ outdir, outputFileExtension: '.yaml' });
const installProps = operatorPropsFromEnv(process.env);
new OperatorChart(install, 'install', installProps);
install.synth();
const header = installFileHeader(installProps);
const installFile = join(outdir, 'install.yaml');
writeFileSync(installFile, header.comment + readFileSync(installFile, 'utf8'));
if (header.notice) process.stderr.write(`${header.notice}\n`);

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
for (const [file, text] of Object.entries(helmChart(version))) {
  const path = join(outdir, 'helm', 'recon8s', file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
