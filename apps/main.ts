// The cdk8s app that `cdk8s synth` runs (cdk8s.yaml): the CRDs and the example infrastructure, to dist/.
import { App } from 'cdk8s';
import { CrdsChart, ExampleChart } from './examples.js';

const app = new App();
new CrdsChart(app, 'crds');
new ExampleChart(app, 'example', { namespace: 'example' });
app.synth();
