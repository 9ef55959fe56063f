import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSynth } from '../support/run.js';

/** Every file under `dir` (subfolders included), as paths relative to it. */
const filesIn = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();

describe('cdk8s synth', function () {
  this.timeout(180_000);
  it('writes the CRDs, the example and the operator install (install.yaml), byte-identical across runs', () => {
    const a = mkdtempSync(join(tmpdir(), 'recon8s-synth-a-'));
    const b = mkdtempSync(join(tmpdir(), 'recon8s-synth-b-'));
    try {
      assert.equal(runSynth(a).status, 0);
      assert.equal(runSynth(b).status, 0);
      const files = filesIn(a);
      assert.deepEqual(files, [
        'crds.k8s.yaml',
        'example.k8s.yaml',
        ...['Chart.yaml', 'crds/recon8s.dev.yaml', 'templates/guard.yaml', 'templates/install.yaml', 'values.yaml'].map(
          (f) => join('helm', 'recon8s', f),
        ),
        'install.yaml',
      ]);
      assert.deepEqual(filesIn(b), files);
      for (const f of files)
        assert.equal(readFileSync(join(a, f), 'utf8'), readFileSync(join(b, f), 'utf8'), `${f} differs between runs`);
      const crds = readFileSync(join(a, 'crds.k8s.yaml'), 'utf8');
      assert.match(crds, /name: apps\.recon8s\.dev/);
      assert.match(crds, /name: mysqlclusters\.recon8s\.dev/);
    } finally {
      rmSync(a, { recursive: true, force: true });
      rmSync(b, { recursive: true, force: true });
    }
  });
});
