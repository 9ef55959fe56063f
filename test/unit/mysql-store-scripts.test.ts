import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shippedScripts } from './support/mysql-scripts.js';

/** Runs a function of common.sh in bash, in a directory holding `files`; its stdout, or throws with its stderr. */
function common(call: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'recon8s-store-scripts-'));
  try {
    const scripts = join(dir, 'scripts');
    mkdirSync(scripts);
    for (const [name, text] of Object.entries(shippedScripts())) writeFileSync(join(scripts, name), text);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const r = spawnSync('bash', ['-c', `. "$2/common.sh"\ncd "$1" && ${call}`, 'test', dir, scripts], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(r.stderr);
    return r.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('MySQLCluster store scripts', () => {
  describe('dump_gtid_set: the GTID point of a mysqldump header', () => {
    const cases: [string, string, string][] = [
      [
        "MySQL 9.7's form",
        "/* SET @@GLOBAL.GTID_PURGED='+c595dd23-e7e5-11f1-a62c-7e03e83d9704:1-14';*/\n",
        'c595dd23-e7e5-11f1-a62c-7e03e83d9704:1-14',
      ],
      [
        "9.7's form over two servers (the set goes on over a second line)",
        "/* SET @@GLOBAL.GTID_PURGED='+a3682473-d901-11ee-9446-567b0e29bc8b:1-447,\nda0279d4-cdac-11ee-a636-b64a489e42e6:1-475';*/\n",
        'a3682473-d901-11ee-9446-567b0e29bc8b:1-447,da0279d4-cdac-11ee-a636-b64a489e42e6:1-475',
      ],
      [
        "8.x's form",
        "-- SET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ 'a3682473-d901-11ee-9446-567b0e29bc8b:1-447,\nda0279d4-cdac-11ee-a636-b64a489e42e6:1-475';\n",
        'a3682473-d901-11ee-9446-567b0e29bc8b:1-447,da0279d4-cdac-11ee-a636-b64a489e42e6:1-475',
      ],
      ['no header (a server without transactions)', '', ''],
    ];
    for (const [name, header, expected] of cases)
      it(name, () => assert.equal(common('dump_gtid_set header', { header }), expected));

    it('refuses what is not a GTID set rather than record it', () => {
      assert.throws(
        () => common('dump_gtid_set header', { header: "/* SET @@GLOBAL.GTID_PURGED='+x; DROP TABLE t';*/\n" }),
        /cannot read the GTID set from the dump header/,
      );
    });
  });

  it('last_words names the newest backups however few there are (a wrong backup name lists them)', () => {
    assert.equal(common('last_words 5 20261124T030000Z'), '20261124T030000Z');
    assert.equal(common('last_words 5 a b c'), 'a b c');
    assert.equal(common('last_words 5 a b c d e f g'), 'c d e f g');
    assert.equal(common('last_words 5'), '');
  });

  it('json_field reads the string and number fields the scripts write', () => {
    const json = '{"name":"20261124T030000Z","sizeBytes":1234,"gtidSet":""}';
    assert.equal(common(`json_field '${json}' name`), '20261124T030000Z');
    assert.equal(common(`json_field '${json}' sizeBytes`), '1234');
    assert.equal(common(`json_field '${json}' gtidSet`), '');
    assert.equal(common(`json_field '${json}' missing || echo absent`), 'absent\n');
  });
});
