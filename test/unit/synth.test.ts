import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSynth } from '../support/run.js';

describe('cdk8s synth', function () {
  this.timeout(180_000);
  it('writes the CRDs and the example, byte-identical across runs', () => {
    const a = mkdtempSync(join(tmpdir(), 'recon8s-synth-a-'));
    const b = mkdtempSync(join(tmpdir(), 'recon8s-synth-b-'));
    try {
      assert.equal(runSynth(a).status, 0);
      assert.equal(runSynth(b).status, 0);
      const files = readdirSync(a).sort();
      assert.deepEqual(files, ['crds.k8s.yaml', 'example.k8s.yaml']);
      assert.deepEqual(readdirSync(b).sort(), files);
      for (const f of files) assert.equal(readFileSync(join(a, f), 'utf8'), readFileSync(join(b, f), 'utf8'), `${f} differs between runs`);
      const crds = readFileSync(join(a, 'crds.k8s.yaml'), 'utf8');
      assert.match(crds, /name: apps\.recon8s\.dev/);
      assert.match(crds, /name: mysqlclusters\.recon8s\.dev/);
    } finally {
      rmSync(a, { recursive: true, force: true });
      rmSync(b, { recursive: true, force: true });
    }
  });
});
