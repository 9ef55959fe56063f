// The cdk8s app that `cdk8s synth` runs (cdk8s.yaml). Two cdk8s Apps, two folders:
// - dist/: the CRDs and the example infrastructure (crds.k8s.yaml, example.k8s.yaml);
// - dist/operator/: the operator's whole install (`kubectl apply -f dist/operator/`), see operator.ts.
// `cdk8s synth --output X` empties X and runs this with CDK8S_OUTDIR=X; run directly, it writes to dist/.
import { join } from 'node:path';
import { App } from 'cdk8s';
import { CrdsChart, ExampleChart } from './examples.js';
import { OperatorChart, operatorPropsFromEnv } from './operator.js';

const outdir = process.env.CDK8S_OUTDIR ?? 'dist';

const app = new App({ outdir });
new CrdsChart(app, 'crds');
new ExampleChart(app, 'example', { namespace: 'example' });
app.synth();

const operator = new App({ outdir: join(outdir, 'operator') });
new OperatorChart(operator, 'operator', operatorPropsFromEnv(process.env));
operator.synth();
