import assert from 'node:assert/strict';
import { parseDuration } from '../../lib/cli/duration.js';
import { colorizeDiff, useColor } from '../../lib/diff/color.js';
import { diffableYaml, stripNoise } from '../../lib/diff/noise.js';
import { splitLines, unifiedDiff } from '../../lib/diff/unified.js';

const lines = (n: number, from = 1): string => Array.from({ length: n }, (_, i) => `line ${i + from}\n`).join('');
const diff = (oldText: string, newText: string, context?: number): string =>
  unifiedDiff({ oldName: 'a', newName: 'b', oldText, newText, context });

/** A small deterministic pseudo-random generator, so a failing case can be replayed. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x7fffffff;
  };
}

/** Applies a unified diff to `text` (as patch(1) would), to check hunks against the text they came from. */
function applyPatch(text: string, patch: string): string {
  const old = splitLines(text);
  const out: string[] = [];
  const body = patch.split('\n').slice(2, -1);
  let at = 0;
  for (let i = 0; i < body.length; i++) {
    const line = body[i] ?? '';
    const m = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(line);
    if (m) {
      const start = Number(m[2] === '0' ? Number(m[1]) + 1 : m[1]) - 1;
      while (at < start) out.push(old[at++] ?? '');
      continue;
    }
    const noNewline = body[i + 1] === '\\ No newline at end of file';
    const content = line.slice(1) + (noNewline ? '' : '\n');
    if (line[0] === ' ' || line[0] === '-') {
      assert.equal(old[at], content, `line ${at + 1} of the old text`);
      at++;
    }
    if (line[0] === ' ' || line[0] === '+') out.push(content);
    if (noNewline) i++;
  }
  while (at < old.length) out.push(old[at++] ?? '');
  return out.join('');
}

describe('unified diff', () => {
  it('is empty for equal texts', () => {
    assert.equal(diff('', ''), '');
    assert.equal(diff(lines(5), lines(5)), '');
  });

  it('shows one changed line with three lines of context and exact hunk ranges', () => {
    const before = lines(10);
    const after = before.replace('line 5\n', 'line five\n');
    assert.equal(
      diff(before, after),
      [
        '--- a',
        '+++ b',
        '@@ -2,7 +2,7 @@',
        ' line 2',
        ' line 3',
        ' line 4',
        '-line 5',
        '+line five',
        ' line 6',
        ' line 7',
        ' line 8',
        '',
      ].join('\n'),
    );
  });

  it('keeps the context inside the file at its start and its end', () => {
    assert.equal(diff('a\nb\nc\n', 'A\nb\nc\n'), '--- a\n+++ b\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n');
    assert.equal(diff('a\nb\nc\n', 'a\nb\nC\n', 1), '--- a\n+++ b\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n');
  });

  it('writes a one-line range without its count, and an empty range as the line before it', () => {
    assert.equal(diff('a\nb\nc\n', 'a\nB\nc\n', 0), '--- a\n+++ b\n@@ -2 +2 @@\n-b\n+B\n');
    assert.equal(diff('a\nc\n', 'a\nb\nc\n', 0), '--- a\n+++ b\n@@ -1,0 +2 @@\n+b\n');
    assert.equal(diff('a\nb\nc\n', 'a\nc\n', 0), '--- a\n+++ b\n@@ -2 +1,0 @@\n-b\n');
  });

  it('makes separate hunks of distant changes and one hunk of close ones', () => {
    const before = lines(30);
    const far = before.replace('line 3\n', 'three\n').replace('line 25\n', 'twenty-five\n');
    const farDiff = diff(before, far);
    assert.deepEqual(
      farDiff.split('\n').filter((l) => l.startsWith('@@')),
      ['@@ -1,6 +1,6 @@', '@@ -22,7 +22,7 @@'],
    );
    // Six unchanged lines between two changes: the two contexts meet, so one hunk.
    const close = before.replace('line 10\n', 'ten\n').replace('line 17\n', 'seventeen\n');
    assert.deepEqual(
      diff(before, close)
        .split('\n')
        .filter((l) => l.startsWith('@@')),
      ['@@ -7,14 +7,14 @@'],
    );
    // Seven unchanged lines between them: two hunks.
    const apart = before.replace('line 10\n', 'ten\n').replace('line 18\n', 'eighteen\n');
    assert.deepEqual(
      diff(before, apart)
        .split('\n')
        .filter((l) => l.startsWith('@@')),
      ['@@ -7,7 +7,7 @@', '@@ -15,7 +15,7 @@'],
    );
  });

  it('shows a created file as all additions against /dev/null', () => {
    const text = unifiedDiff({
      oldName: '/dev/null',
      newName: 'recon8s/v1/Service/ns/web',
      oldText: '',
      newText: 'a: 1\nb: 2\n',
    });
    assert.equal(text, '--- /dev/null\n+++ recon8s/v1/Service/ns/web\n@@ -0,0 +1,2 @@\n+a: 1\n+b: 2\n');
  });

  it('shows a deleted file as all removals against /dev/null', () => {
    const text = unifiedDiff({
      oldName: 'live/v1/Service/ns/web',
      newName: '/dev/null',
      oldText: 'a: 1\n',
      newText: '',
    });
    assert.equal(text, '--- live/v1/Service/ns/web\n+++ /dev/null\n@@ -1 +0,0 @@\n-a: 1\n');
  });

  it('marks a last line without a newline, as diff -u does', () => {
    assert.equal(diff('a\nb', 'a\nb\n'), '--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n');
    assert.equal(diff('a\nb\n', 'a\nc'), '--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n');
    // Unchanged last line without a newline, shown as context: marked too, and the output still ends with "\n".
    assert.equal(diff('x\nz', 'y\nz'), '--- a\n+++ b\n@@ -1,2 +1,2 @@\n-x\n+y\n z\n\\ No newline at end of file\n');
    assert.equal(diff('a', ''), '--- a\n+++ b\n@@ -1 +0,0 @@\n-a\n\\ No newline at end of file\n');
  });

  it('lists removals before additions within a change', () => {
    const body = diff('a\nb\nc\n', 'x\nb\ny\nz\n').split('\n').slice(3, -1);
    assert.deepEqual(body, ['-a', '+x', ' b', '-c', '+y', '+z']);
  });

  it('writes hunks whose ranges and lines rebuild the new text from the old (random texts)', () => {
    const next = random(7);
    for (let round = 0; round < 300; round++) {
      const text = (): string => {
        const n = Math.floor(next() * 25);
        const body = Array.from({ length: n }, () => 'abcdef'[Math.floor(next() * 6)]).join('\n');
        return n > 0 && next() < 0.85 ? `${body}\n` : body;
      };
      const a = text();
      const b = next() < 0.5 ? text() : a.replace('c', 'x').replace('e\n', '');
      const patch = diff(a, b, round % 4);
      assert.equal(patch === '' ? a : applyPatch(a, patch), b, `patch of ${JSON.stringify([a, b])}:\n${patch}`);
    }
  });
});

describe('noise stripping', () => {
  const live = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'shop',
      uid: '1234',
      resourceVersion: '99',
      generation: 4,
      creationTimestamp: '2025-01-01T00:00:00Z',
      managedFields: [{ manager: 'recon8s' }],
      labels: { 'app.kubernetes.io/name': 'web' },
      annotations: { 'recon8s.dev/desired-hash': 'abc', 'deployment.kubernetes.io/revision': '3' },
      ownerReferences: [
        { apiVersion: 'recon8s.dev/v1alpha1', kind: 'App', name: 'web', uid: 'owner-uid', controller: true },
      ],
    },
    spec: { replicas: 2 },
    status: { readyReplicas: 2 },
  };

  it('drops server-maintained metadata, status and the desired-hash annotation, and keeps the rest', () => {
    assert.deepEqual(stripNoise(live), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        annotations: { 'deployment.kubernetes.io/revision': '3' },
        labels: { 'app.kubernetes.io/name': 'web' },
        name: 'web',
        namespace: 'shop',
        ownerReferences: [
          { apiVersion: 'recon8s.dev/v1alpha1', controller: true, kind: 'App', name: 'web', uid: 'owner-uid' },
        ],
      },
      spec: { replicas: 2 },
    });
  });

  it('drops annotations left empty, and owner uids on request, without touching its input', () => {
    const created = { ...live, metadata: { ...live.metadata, annotations: { 'recon8s.dev/desired-hash': 'abc' } } };
    const stripped = stripNoise(created, { ownerUids: true });
    assert.equal((stripped.metadata as Record<string, unknown>).annotations, undefined);
    assert.deepEqual((stripped.metadata as { ownerReferences: unknown[] }).ownerReferences, [
      { apiVersion: 'recon8s.dev/v1alpha1', controller: true, kind: 'App', name: 'web' },
    ]);
    assert.equal(created.metadata.uid, '1234');
    assert.equal(created.metadata.annotations['recon8s.dev/desired-hash'], 'abc');
  });

  it('prints YAML with keys sorted, so that key order never shows as a change', () => {
    const a = diffableYaml({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'x' }, data: { b: '2', a: '1' } });
    const b = diffableYaml({
      apiVersion: 'v1',
      data: { a: '1', b: '2' },
      metadata: { name: 'x', resourceVersion: '7' },
      kind: 'ConfigMap',
    });
    assert.equal(a, b);
    assert.equal(a, 'apiVersion: v1\ndata:\n  a: "1"\n  b: "2"\nkind: ConfigMap\nmetadata:\n  name: x\n');
    assert.equal(diffableYaml(undefined), '');
  });

  it('turns a replicas change into exactly one removed and one added line', () => {
    const text = unifiedDiff({
      oldName: 'live',
      newName: 'recon8s',
      oldText: diffableYaml(live),
      newText: diffableYaml({
        ...live,
        metadata: {
          ...live.metadata,
          resourceVersion: '100',
          generation: 5,
          annotations: { ...live.metadata.annotations, 'recon8s.dev/desired-hash': 'def' },
        },
        spec: { replicas: 3 },
      }),
    });
    assert.deepEqual(
      text.split('\n').filter((l) => /^[-+](?![-+]{2} )/.test(l)),
      ['-  replicas: 2', '+  replicas: 3'],
    );
  });
});

describe('diff colours', () => {
  const ESC = '\u001b[';
  const text = '--- live/x\n+++ recon8s/x\n@@ -1,3 +1,3 @@\n a\n--- b\n+c\n\\ No newline at end of file\n';

  it('colours file headers bold, hunk headers cyan, removals red, additions green', () => {
    assert.equal(
      colorizeDiff(text),
      [
        `${ESC}1m--- live/x${ESC}0m`,
        `${ESC}1m+++ recon8s/x${ESC}0m`,
        `${ESC}36m@@ -1,3 +1,3 @@${ESC}0m`,
        ' a',
        // A removed line reading "-- b" is a removal, not a file header: the hunk's line counts say so.
        `${ESC}31m--- b${ESC}0m`,
        `${ESC}32m+c${ESC}0m`,
        '\\ No newline at end of file',
        '',
      ].join('\n'),
    );
  });

  it('colours nothing else, and an empty diff stays empty', () => {
    assert.equal(colorizeDiff(''), '');
    assert.equal(colorizeDiff(text).replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), ''), text);
  });

  it('colours a terminal unless NO_COLOR is set; always and never override both', () => {
    const tty = { isTTY: true };
    const pipe = { isTTY: false };
    assert.equal(useColor('auto', tty, {}), true);
    assert.equal(useColor('auto', tty, { NO_COLOR: '1' }), false);
    assert.equal(useColor('auto', tty, { NO_COLOR: '' }), true, 'an empty NO_COLOR does not count (no-color.org)');
    assert.equal(useColor('auto', pipe, {}), false);
    assert.equal(useColor('auto', {}, {}), false);
    assert.equal(useColor('always', pipe, { NO_COLOR: '1' }), true);
    assert.equal(useColor('never', tty, {}), false);
  });
});

describe('recon8s apply --timeout', () => {
  it('reads Go-style durations and bare seconds', () => {
    assert.equal(parseDuration('20s'), 20_000);
    assert.equal(parseDuration('5m'), 300_000);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    assert.equal(parseDuration('1.5s'), 1_500);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('45'), 45_000);
  });

  it('fails on anything else', () => {
    for (const bad of ['', 'soon', '5 m', '-1s', '0', '0s', '1d'])
      assert.throws(() => parseDuration(bad), /--timeout/, bad);
  });
});
