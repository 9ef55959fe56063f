import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shippedScripts } from './support/mysql-scripts.js';
import type { MySQLValueGrammarName } from '../../constructs/index.js';
import { isOf } from '../../lib/mysql/store-values.js';

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

  // One table, judged by bash (the scripts' valid) and by JavaScript (the controller's and the CLI's
  // isOf): the grammars of constructs/mysql/grammar.ts must mean the same in both.
  describe('valid: the grammars of what the scripts read from the object store, the same in bash and in TypeScript', () => {
    const uuid = 'c595dd23-e7e5-11f1-a62c-7e03e83d9704';
    const cases: Record<MySQLValueGrammarName, { valid: string[]; invalid: string[] }> = {
      'gtid-set': {
        valid: [
          '',
          `${uuid}:1-14`,
          `${uuid}:1-14:16:20-22`,
          `${uuid}:1-3:tag_1:1-2:other:7`,
          // As MySQL wraps a long set.
          `${uuid}:1-447,\nda0279d4-cdac-11ee-a636-b64a489e42e6:1-475`,
        ],
        invalid: [
          `${uuid}:1-14', ''); CREATE DATABASE pwned; SELECT ('`,
          `${uuid}:0`,
          `${uuid}:tag`,
          `${uuid}:1-14;`,
          `${uuid}:1-14\\`,
          `${uuid}:$(id)`,
          'not-a-uuid:1',
          `${uuid}:1-14,`,
        ],
      },
      gtid: { valid: [`${uuid}:42`, `${uuid}:tag:42`], invalid: [`${uuid}:1-2`, `${uuid}:0`, `${uuid}:42'`] },
      uuid: { valid: [uuid], invalid: [`${uuid}x`, `${uuid}'`] },
      'backup-name': { valid: ['20261124T030000Z'], invalid: ['20261124T030000Z/../x', '../20261124T030000Z', ''] },
      time: {
        valid: ['2026-11-24T10:15:00Z'],
        invalid: ['2026-11-24 10:15:00', '2026-11-24T10:15:00Z; x', '2026-13-24T10:15:00Z', ''],
      },
      count: { valid: ['0', '1234'], invalid: ['a[$(touch /tmp/x)]', '-1', '1e3', '01', ''] },
      'binlog-file': { valid: ['binlog.000002'], invalid: ['..', '.hidden', 'a/b', "x'", ''] },
      segment: {
        valid: [`20261124T030000Z-${uuid}-binlog.000002.json`],
        invalid: [`20261124T030000Z-${uuid}-../../x.json`, `20261124T030000Z-${uuid}-a/b.json`, `x-${uuid}-b.json`],
      },
      'backup-method': { valid: ['logical', 'physical'], invalid: ['Physical', 'physical; x', 'snapshot', ''] },
      host: { valid: ['shop-1.shop-headless'], invalid: ['evil; rm -rf /', 'Shop', '-x'] },
      'encryption-key': {
        // openssl rand -base64 48, and -hex 32.
        valid: [
          'q3Jd9/Zk+0bXhY2mW1nQe7LrT5sVu8aPcFgHiKoMlNj0Ab1Cd2Ef3Gh4Ij5Kl6Mn',
          'a'.repeat(32) + '0123456789abcdef',
        ],
        invalid: [
          'short-passphrase',
          'a'.repeat(31),
          `${'a'.repeat(40)}\n${'b'.repeat(40)}`,
          `${'a'.repeat(40)} b`,
          `${'a'.repeat(40)}'`,
          '',
        ],
      },
    };
    for (const [grammar, { valid, invalid }] of Object.entries(cases)) {
      it(`${grammar}: ${valid.length} taken, ${invalid.length} refused`, () => {
        const name = grammar as MySQLValueGrammarName;
        for (const v of valid) {
          assert.equal(common(`valid ${grammar} "$(cat value)" && echo yes`, { value: v }), 'yes\n', v);
          assert.equal(isOf(name, v), true, v);
        }
        for (const v of invalid) {
          assert.equal(common(`valid ${grammar} "$(cat value)" || echo no`, { value: v }), 'no\n', v);
          assert.equal(isOf(name, v), false, v);
        }
      });
    }
  });

  it('checked refuses a value that is not of its grammar, naming where it came from, the value and what was expected', () => {
    assert.throws(
      () =>
        common('checked x count "$(cat value)" "dataBytes in s3://b/p/base/x/manifest.json"', { value: 'a[$(id)]' }),
      /dataBytes in s3:\/\/b\/p\/base\/x\/manifest\.json is not a whole number: 'a\[\$\(id\)\]'/,
    );
    // A GTID set comes back without the blanks MySQL wraps it with.
    assert.equal(
      common('checked x gtid-set "$(cat value)" here && printf %s "$x"', {
        value: 'c595dd23-e7e5-11f1-a62c-7e03e83d9704:1-2,\n  da0279d4-cdac-11ee-a636-b64a489e42e6:3',
      }),
      'c595dd23-e7e5-11f1-a62c-7e03e83d9704:1-2,da0279d4-cdac-11ee-a636-b64a489e42e6:3',
    );
    // Control characters and long values are shown harmlessly.
    assert.throws(
      () => common('checked x uuid "$(cat value)" here', { value: `\u001b[31m${'x'.repeat(300)}` }),
      (e: Error) => /here is not a server UUID: '\?\[31mx+\.\.\.'/.test(e.message) && !e.message.includes('\u001b'),
    );
  });

  it('stored_field reads a field through its grammar, and says when the field is absent', () => {
    const json = '{"name":"20261124T030000Z","dataBytes":"a[$(touch pwned)]"}';
    assert.equal(
      common('stored_field n "$(cat m)" name backup-name m.json && printf %s "$n"', { m: json }),
      '20261124T030000Z',
    );
    assert.equal(common('stored_field n "$(cat m)" gtidSet gtid-set m.json || echo absent', { m: json }), 'absent\n');
    assert.throws(
      () => common('stored_field n "$(cat m)" dataBytes count m.json; ls', { m: json }),
      /dataBytes in m\.json is not a whole number: 'a\[\$\(touch pwned\)\]'/,
    );
  });

  it('json_field reads the string and number fields the scripts write', () => {
    const json = '{"name":"20261124T030000Z","sizeBytes":1234,"gtidSet":""}';
    assert.equal(common(`json_field '${json}' name`), '20261124T030000Z');
    assert.equal(common(`json_field '${json}' sizeBytes`), '1234');
    assert.equal(common(`json_field '${json}' gtidSet`), '');
    assert.equal(common(`json_field '${json}' missing || echo absent`), 'absent\n');
  });
});
