import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import { GtidSet } from '../../lib/mysql/gtid-set.js';

const A = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
const B = '4e11fa47-71ca-11e1-9e33-c80aa9429562';
const g = (text: string): GtidSet => GtidSet.parse(text);

describe('GtidSet', () => {
  describe('parse and toString', () => {
    it('reads the empty set from an empty string or blanks only', () => {
      assert.ok(g('').isEmpty());
      assert.ok(g('  \n ').isEmpty());
      assert.equal(g('').toString(), '');
      assert.equal(g('').count(), 0);
      assert.ok(GtidSet.EMPTY.isEmpty());
    });

    it('round-trips the form MySQL prints', () => {
      for (const text of [
        `${A}:1-10`,
        `${A}:1`,
        `${A}:1-5:7-9:12`,
        `${A}:1-5,${B}:3`,
        `${A}:1-5:tag:1-3`,
        `${A}:1-5:alpha:1:beta:2-4`,
        `${A}:tag:1-3`,
      ])
        assert.equal(g(text).toString(), text);
    });

    it('ignores blanks and the newlines MySQL wraps long sets with', () => {
      assert.equal(g(` ${A}:1-5,\n${B}:3 `).toString(), `${A}:1-5,${B}:3`);
    });

    it('lower-cases the uuid and the tag, and accepts a uuid without dashes', () => {
      assert.equal(g(`${A.toUpperCase()}:1-2:TAG:3`).toString(), `${A}:1-2:tag:3`);
      assert.equal(g(`${A.replace(/-/g, '')}:4`).toString(), `${A}:4`);
      assert.ok(g(`${A.toUpperCase()}:1`).equals(g(`${A}:1`)));
    });

    it('merges overlapping, adjacent and unsorted intervals, and repeated uuids', () => {
      assert.equal(g(`${A}:7-9:1-3:4-5:2`).toString(), `${A}:1-5:7-9`);
      assert.equal(g(`${A}:1-3,${A}:4-6`).toString(), `${A}:1-6`);
      assert.equal(g(`${A}:1-10:3-4`).toString(), `${A}:1-10`);
    });

    it('sorts the sources, untagged intervals before tagged ones', () => {
      assert.equal(g(`${B}:1,${A}:2`).toString(), `${A}:2,${B}:1`);
      assert.equal(g(`${A}:zz:1,${A}:aa:2,${A}:5`).toString(), `${A}:5:aa:2:zz:1`);
    });

    it('rejects what is not a GTID set, naming the part', () => {
      for (const bad of [
        'garbage',
        `${A}`,
        `${A}:`,
        `${A}:0`,
        `${A}:5-3`,
        `${A}:1-x`,
        `${A}::1`,
        `${A}:1-2:1tag:3`,
        `${A}:1,`,
        'not-a-uuid:1-3',
        `${A.slice(0, -1)}:1`,
        `${A}:1-99999999999999999999`,
      ])
        assert.throws(() => g(bad), /not a GTID/, bad);
    });
  });

  describe('count', () => {
    it('counts every transaction of every source and tag', () => {
      assert.equal(g(`${A}:1-10`).count(), 10);
      assert.equal(g(`${A}:1-5:7:9-10,${B}:1-100:t:1-3`).count(), 5 + 1 + 2 + 100 + 3);
    });
  });

  describe('isSubsetOf and equals', () => {
    it('holds for a set within another', () => {
      assert.ok(g(`${A}:1-5`).isSubsetOf(g(`${A}:1-10`)));
      assert.ok(g(`${A}:3:7`).isSubsetOf(g(`${A}:1-10,${B}:1`)));
      assert.ok(GtidSet.EMPTY.isSubsetOf(g(`${A}:1`)));
      assert.ok(GtidSet.EMPTY.isSubsetOf(GtidSet.EMPTY));
      assert.ok(g(`${A}:1-10`).isSubsetOf(g(`${A}:1-10`)));
    });

    it('fails for a transaction the other lacks', () => {
      assert.ok(!g(`${A}:1-11`).isSubsetOf(g(`${A}:1-10`)));
      assert.ok(!g(`${A}:1-10,${B}:1`).isSubsetOf(g(`${A}:1-10`)));
      assert.ok(!g(`${A}:1`).isSubsetOf(GtidSet.EMPTY));
      assert.ok(!g(`${A}:5:7`).isSubsetOf(g(`${A}:1-5:8-10`)));
    });

    it('keeps tagged and untagged transactions of one uuid apart', () => {
      assert.ok(!g(`${A}:t:1`).isSubsetOf(g(`${A}:1`)));
      assert.ok(!g(`${A}:1`).isSubsetOf(g(`${A}:t:1`)));
      assert.ok(!g(`${A}:a:1`).isSubsetOf(g(`${A}:b:1`)));
      assert.ok(g(`${A}:t:2`).isSubsetOf(g(`${A}:1-5:t:1-3`)));
    });

    it('compares sets, not texts', () => {
      assert.ok(g(`${A}:1-3:4-5`).equals(g(`${A}:1-5`)));
      assert.ok(g(`${B}:1,${A}:1`).equals(g(`${A}:1,${B}:1`)));
      assert.ok(!g(`${A}:1-5`).equals(g(`${A}:1-6`)));
      assert.ok(!g(`${A}:1-5`).equals(g(`${A}:1-5,${B}:1`)));
      assert.ok(g('').equals(GtidSet.EMPTY));
    });
  });

  describe('union', () => {
    it('holds both sets, merged', () => {
      assert.equal(
        g(`${A}:1-5`)
          .union(g(`${A}:6-10`))
          .toString(),
        `${A}:1-10`,
      );
      assert.equal(
        g(`${A}:1-3`)
          .union(g(`${A}:7,${B}:2`))
          .toString(),
        `${A}:1-3:7,${B}:2`,
      );
      assert.equal(
        g(`${A}:1-3:t:1`)
          .union(g(`${A}:t:2-4`))
          .toString(),
        `${A}:1-3:t:1-4`,
      );
      assert.equal(GtidSet.EMPTY.union(g(`${A}:4`)).toString(), `${A}:4`);
      assert.equal(g(`${A}:4`).union(GtidSet.EMPTY).toString(), `${A}:4`);
    });

    it('leaves both operands unchanged', () => {
      const x = g(`${A}:1-3`);
      const y = g(`${A}:5-6`);
      x.union(y);
      assert.equal(x.toString(), `${A}:1-3`);
      assert.equal(y.toString(), `${A}:5-6`);
    });
  });

  describe('subtract', () => {
    it('keeps what the other lacks (MySQL GTID_SUBTRACT)', () => {
      assert.equal(
        g(`${A}:1-10`)
          .subtract(g(`${A}:3-4:6-7`))
          .toString(),
        `${A}:1-2:5:8-10`,
      );
      assert.equal(
        g(`${A}:1-10`)
          .subtract(g(`${A}:1-10`))
          .toString(),
        '',
      );
      assert.ok(
        g(`${A}:1-10`)
          .subtract(g(`${A}:1-20`))
          .isEmpty(),
      );
      assert.equal(
        g(`${A}:1-10`)
          .subtract(g(`${A}:1-3`))
          .toString(),
        `${A}:4-10`,
      );
      assert.equal(
        g(`${A}:1-10`)
          .subtract(g(`${A}:8-30`))
          .toString(),
        `${A}:1-7`,
      );
      assert.equal(
        g(`${A}:5-10`)
          .subtract(g(`${A}:1-2:12`))
          .toString(),
        `${A}:5-10`,
      );
      assert.equal(
        g(`${A}:1-10,${B}:1-2`)
          .subtract(g(`${A}:1-10`))
          .toString(),
        `${B}:1-2`,
      );
      assert.equal(
        g(`${A}:1-5:t:1-5`)
          .subtract(g(`${A}:t:2-3`))
          .toString(),
        `${A}:1-5:t:1:4-5`,
      );
      assert.equal(
        g(`${A}:1-3:7-9`)
          .subtract(g(`${A}:2-8`))
          .toString(),
        `${A}:1:9`,
      );
      assert.ok(GtidSet.EMPTY.subtract(g(`${A}:1`)).isEmpty());
    });

    it('agrees with union and subset on every small set (exhaustive over A:1-5)', () => {
      // Every subset of A:1..5, as text, then checked against a plain Set<number>.
      const sets: { set: GtidSet; numbers: Set<number> }[] = [];
      for (let bits = 0; bits < 32; bits++) {
        const numbers = new Set([1, 2, 3, 4, 5].filter((n) => bits & (1 << (n - 1))));
        const text = numbers.size === 0 ? '' : `${A}:${[...numbers].join(':')}`;
        sets.push({ set: g(text), numbers });
      }
      const text = (numbers: Set<number>): string => {
        if (numbers.size === 0) return '';
        const sorted = [...numbers].sort((a, b) => a - b);
        const runs: [number, number][] = [];
        for (const n of sorted) {
          const last = runs[runs.length - 1];
          if (last && n === last[1] + 1) last[1] = n;
          else runs.push([n, n]);
        }
        return `${A}:${runs.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(':')}`;
      };
      for (const x of sets) {
        assert.equal(x.set.count(), x.numbers.size);
        assert.equal(x.set.toString(), text(x.numbers));
        for (const y of sets) {
          const union = new Set([...x.numbers, ...y.numbers]);
          const minus = new Set([...x.numbers].filter((n) => !y.numbers.has(n)));
          const both = new Set([...x.numbers].filter((n) => y.numbers.has(n)));
          assert.equal(x.set.intersect(y.set).toString(), text(both));
          assert.equal(x.set.union(y.set).toString(), text(union));
          assert.equal(x.set.subtract(y.set).toString(), text(minus));
          assert.equal(x.set.isSubsetOf(y.set), minus.size === 0);
          assert.equal(x.set.equals(y.set), text(x.numbers) === text(y.numbers));
        }
      }
    });
  });
  describe('ofServer', () => {
    it("keeps one server's transactions, tagged ones included, whatever the uuid's spelling", () => {
      const set = g(`${A}:1-5:tag:1,${B}:1-3`);
      assert.equal(set.ofServer(A).toString(), `${A}:1-5:tag:1`);
      assert.equal(set.ofServer(A.toUpperCase().replace(/-/g, '')).toString(), `${A}:1-5:tag:1`);
      assert.equal(set.ofServer(B).toString(), `${B}:1-3`);
      assert.ok(set.ofServer('00000000-0000-0000-0000-000000000000').isEmpty());
    });
  });
});
