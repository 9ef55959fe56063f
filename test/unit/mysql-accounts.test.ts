// The accounts of bound Apps (lib/mysql/accounts.ts): names, grants, and the decision from what the
// Apps ask and what the server has to the statements, over every case a server can be in.
import assert from 'node:assert/strict';
import type { AccountRequest, ObservedAccount, ObservedServer } from '../../lib/mysql/accounts.js';
import {
  ACCESS_PRIVILEGES,
  accountName,
  databaseLevel,
  describeStatement,
  grantPattern,
  passwordFingerprint,
  planAccounts,
  statementSql,
} from '../../lib/mysql/accounts.js';

const PASSWORD = 'p4ssw0rd-random-192-bits-base64u';
const USER = accountName('shop', 'web');
const request = (o: Partial<AccountRequest> = {}): AccountRequest => ({
  app: 'shop/web',
  user: USER,
  database: 'shop',
  access: 'readWrite',
  password: PASSWORD,
  ...o,
});
const granted = (database: string, access: 'readWrite' | 'readOnly') =>
  ACCESS_PRIVILEGES[access].map((privilege) => ({ on: databaseLevel(database), privilege }));
const owned = (o: Partial<ObservedAccount> = {}): ObservedAccount => ({
  user: USER,
  app: 'shop/web',
  fingerprint: passwordFingerprint(USER, PASSWORD),
  privileges: granted('shop', 'readWrite'),
  ...o,
});
const server = (accounts: ObservedAccount[] = [], databases: string[] = ['shop']): ObservedServer => ({
  databases: new Set(databases),
  accounts,
});
const kinds = (requests: AccountRequest[], observed: ObservedServer): string[] =>
  planAccounts(requests, observed).statements.map((s) => s.type);

describe('App database accounts', () => {
  describe('accountName', () => {
    it('is readable and at most 32 characters, for the longest App name', () => {
      assert.match(USER, /^r8s_web_[0-9a-f]{10}$/);
      const long = accountName('a'.repeat(63), `x${'-y'.repeat(31)}`);
      assert.ok(long.length <= 32, long);
      assert.match(long, /^r8s_x(-y)*_[0-9a-f]{10}$/);
    });

    it('never ends the readable part with a "-" (cut in the middle of a name)', () => {
      assert.doesNotMatch(accountName('ns', 'abcdefghijklmnop-qrs'), /-_/);
    });

    it('differs between Apps of the same name in other namespaces, and between names cut alike', () => {
      const names = new Set([
        accountName('shop', 'web'),
        accountName('billing', 'web'),
        accountName('shop', 'web2'),
        accountName('shop', 'aaaaaaaaaaaaaaaaaa-one'),
        accountName('shop', 'aaaaaaaaaaaaaaaaaa-two'),
        // "<ns>/<name>" must not be ambiguous: a/b-c vs a-b/c
        accountName('a', 'b-c'),
        accountName('a-b', 'c'),
      ]);
      assert.equal(names.size, 7);
    });

    it('is the same every time (the account outlives controller restarts)', () => {
      assert.equal(accountName('shop', 'web'), accountName('shop', 'web'));
    });
  });

  describe('grants', () => {
    it('escapes the GRANT wildcards in a database name, so a grant on shop_1 is not one on shopX1', () => {
      assert.equal(grantPattern('shop_1'), 'shop\\_1');
      assert.equal(databaseLevel('shop_1'), '`shop\\_1`.*');
      assert.equal(databaseLevel('shop'), '`shop`.*');
    });

    it('readOnly is SELECT and SHOW VIEW; readWrite adds data and table changes, never grants or routines', () => {
      assert.deepEqual(ACCESS_PRIVILEGES.readOnly, ['SELECT', 'SHOW VIEW']);
      for (const p of ['INSERT', 'UPDATE', 'DELETE', 'CREATE', 'ALTER', 'INDEX', 'DROP'])
        assert.ok(ACCESS_PRIVILEGES.readWrite.includes(p), p);
      for (const p of ['GRANT OPTION', 'CREATE ROUTINE', 'ALTER ROUTINE', 'EVENT', 'SUPER', 'FILE', 'PROCESS', 'ALL'])
        assert.ok(!ACCESS_PRIVILEGES.readWrite.includes(p), p);
    });

    it('creates every App account REQUIRE SSL, and makes an older one require it at its next password', () => {
      for (const s of [
        ...planAccounts([request({ database: 'shop_1' })], server([], [])).statements,
        ...planAccounts([request()], server([owned({ fingerprint: 'x' })])).statements,
      ].filter((x) => x.type === 'createUser' || x.type === 'setPassword'))
        assert.match(statementSql(s).sql, / REQUIRE SSL /, s.type);
    });

    it('renders each statement with placeholders: the password only ever in the values', () => {
      const plan = planAccounts([request({ database: 'shop_1' })], server([], []));
      const sqls = plan.statements.map(statementSql);
      assert.deepEqual(
        sqls.map((s) => s.sql),
        [
          'CREATE DATABASE IF NOT EXISTS `shop_1`',
          "CREATE USER ?@'%' IDENTIFIED BY ? REQUIRE SSL ATTRIBUTE ?",
          `GRANT ${ACCESS_PRIVILEGES.readWrite.join(', ')} ON \`shop\\_1\`.* TO ?@'%'`,
        ],
      );
      for (const s of sqls) assert.ok(!s.sql.includes(PASSWORD));
      assert.deepEqual(sqls[1]?.values, [
        USER,
        PASSWORD,
        JSON.stringify({ recon8s: { app: 'shop/web', fingerprint: passwordFingerprint(USER, PASSWORD) } }),
      ]);
      for (const s of plan.statements) assert.ok(!describeStatement(s).includes(PASSWORD), describeStatement(s));
    });

    it('a fingerprint is not the password and changes with it', () => {
      assert.notEqual(passwordFingerprint(USER, PASSWORD), PASSWORD);
      assert.ok(!passwordFingerprint(USER, PASSWORD).includes(PASSWORD.slice(0, 8)));
      assert.notEqual(passwordFingerprint(USER, PASSWORD), passwordFingerprint(USER, `${PASSWORD}x`));
      assert.notEqual(passwordFingerprint(USER, PASSWORD), passwordFingerprint(`${USER}x`, PASSWORD));
    });
  });

  describe('planAccounts', () => {
    it('a new binding: the database, the account, the grant; ready', () => {
      const plan = planAccounts([request()], server([], []));
      assert.deepEqual(
        plan.statements.map((s) => s.type),
        ['createDatabase', 'createUser', 'grant'],
      );
      assert.deepEqual(plan.outcomes, [
        {
          app: 'shop/web',
          user: USER,
          state: 'ready',
          message: `account ${USER} has readWrite access to database shop`,
          password: { revision: '0', retains: false },
        },
      ]);
    });

    it('a database that exists is not created again; two Apps on one database create it once', () => {
      assert.deepEqual(kinds([request()], server([], ['shop'])), ['createUser', 'grant']);
      const other = request({ app: 'shop/api', user: accountName('shop', 'api') });
      assert.deepEqual(kinds([request(), other], server([], [])), [
        'createDatabase',
        'createUser',
        'createUser',
        'grant',
        'grant',
      ]);
    });

    it('steady state: nothing to do', () => {
      assert.deepEqual(kinds([request()], server([owned()])), []);
    });

    it('a password that is not the Secret one is set again (the App recreated with a new Secret)', () => {
      assert.deepEqual(kinds([request()], server([owned({ fingerprint: 'other' })])), ['setPassword']);
      assert.deepEqual(kinds([request()], server([owned({ fingerprint: undefined })])), ['setPassword']);
    });

    describe("during a password rotation (the decision is rotation.ts's; here: the statements and what is reported)", () => {
      const NEXT = 'n3xt-random-192-bits-base64url-x';
      const staged = (o: Partial<AccountRequest> = {}): AccountRequest =>
        request({ nextPassword: NEXT, rotation: { requested: 'T1', staged: 'T1' }, ...o });
      const holdingNext = (o: Partial<ObservedAccount> = {}) =>
        owned({ fingerprint: passwordFingerprint(USER, NEXT), retainsPassword: true, ...o });

      it('staged: the new password is set with the current one retained, in one statement naming its fingerprint', () => {
        const plan = planAccounts([staged()], server([owned()]));
        assert.deepEqual(plan.statements, [
          {
            type: 'setPassword',
            user: USER,
            app: 'shop/web',
            password: NEXT,
            fingerprint: passwordFingerprint(USER, NEXT),
            retain: true,
            purpose: 'rotate',
          },
        ]);
        const sql = statementSql(plan.statements[0] as never);
        assert.equal(sql.sql, "ALTER USER ?@'%' IDENTIFIED BY ? RETAIN CURRENT PASSWORD REQUIRE SSL ATTRIBUTE ?");
        assert.ok(!sql.sql.includes(NEXT));
        assert.ok(!describeStatement(plan.statements[0] as never).includes(NEXT));
        assert.deepEqual(plan.outcomes[0]?.password, { revision: 'T1', retains: true });
      });

      it('the account on the staged password with the old one retained is no drift: nothing is set back (the bug a plain repair had)', () => {
        const plan = planAccounts([staged()], server([holdingNext()]));
        assert.deepEqual(plan.statements, []);
        assert.deepEqual(plan.outcomes[0]?.password, { revision: 'T1', retains: true });
      });

      it('switched, pods rolling: nothing is discarded; rolled: the old password is discarded', () => {
        const switched = (rolledRevision?: string): AccountRequest =>
          request({
            password: NEXT,
            rotation: {
              requested: 'T1',
              secretRevision: 'T1',
              rollRevision: 'T1',
              ...(rolledRevision ? { rolledRevision } : {}),
            },
          });
        assert.deepEqual(kinds([switched()], server([holdingNext()])), []);
        const plan = planAccounts([switched('T1')], server([holdingNext()]));
        assert.deepEqual(plan.statements, [
          { type: 'discardOldPassword', user: USER, app: 'shop/web', rotation: 'T1' },
        ]);
        assert.equal(statementSql(plan.statements[0] as never).sql, "ALTER USER ?@'%' DISCARD OLD PASSWORD");
        assert.deepEqual(plan.outcomes[0]?.password, { revision: 'T1', retains: false });
      });

      it('drift after the switch is repaired with the present password retained, so pods not rolled yet keep logging in', () => {
        const switched = request({ password: NEXT, rotation: { requested: 'T1', secretRevision: 'T1' } });
        const plan = planAccounts([switched], server([owned({ retainsPassword: false })]));
        assert.deepEqual(
          plan.statements.map((s) => (s.type === 'setPassword' ? [s.type, s.retain, s.purpose] : [s.type])),
          [['setPassword', true, 'repair']],
        );
      });

      it('drift before the switch sets the password the pods use, keeping any retained one (a plain ALTER keeps it)', () => {
        const plan = planAccounts([staged()], server([owned({ fingerprint: 'x', retainsPassword: true })]));
        assert.deepEqual(
          plan.statements.map((s) => (s.type === 'setPassword' ? [s.password, s.retain] : [s.type])),
          [[PASSWORD, false]],
        );
      });

      it('the old password discarded by hand before the switch: set again, the new one retained', () => {
        const plan = planAccounts([staged()], server([holdingNext({ retainsPassword: false })]));
        assert.deepEqual(
          plan.statements.map((s) => (s.type === 'setPassword' ? [s.password, s.retain, s.purpose] : [s.type])),
          [[PASSWORD, true, 'restore']],
        );
      });

      it('outside a rotation: a secondary password recon8s did not leave is discarded; drift is set plainly, as before', () => {
        assert.deepEqual(planAccounts([request()], server([owned({ retainsPassword: true })])).statements, [
          { type: 'discardOldPassword', user: USER, app: 'shop/web' },
        ]);
        const drift = planAccounts([request()], server([owned({ fingerprint: 'x' })])).statements[0];
        assert.ok(drift?.type === 'setPassword' && !drift.retain && drift.purpose === 'repair');
        assert.equal(statementSql(drift).sql, "ALTER USER ?@'%' IDENTIFIED BY ? REQUIRE SSL ATTRIBUTE ?");
        assert.deepEqual(planAccounts([request()], server([owned()])).outcomes[0]?.password, {
          revision: '0',
          retains: false,
        });
      });
    });

    it('readWrite to readOnly: the write privileges are revoked, nothing granted', () => {
      const plan = planAccounts([request({ access: 'readOnly' })], server([owned()]));
      assert.equal(plan.statements.length, 1);
      const revoke = plan.statements[0];
      assert.ok(revoke?.type === 'revoke');
      assert.equal(revoke.on, '`shop`.*');
      assert.deepEqual(
        revoke.privileges,
        ACCESS_PRIVILEGES.readWrite.filter((p) => p !== 'SELECT' && p !== 'SHOW VIEW').sort(),
      );
    });

    it('readOnly to readWrite: only the missing privileges are granted', () => {
      const plan = planAccounts([request()], server([owned({ privileges: granted('shop', 'readOnly') })]));
      assert.deepEqual(plan.statements, [
        {
          type: 'grant',
          user: USER,
          on: '`shop`.*',
          privileges: ACCESS_PRIVILEGES.readWrite.filter((p) => p !== 'SELECT' && p !== 'SHOW VIEW'),
        },
      ]);
    });

    it('another database: everything on the old one revoked, the new one created and granted; the old one kept', () => {
      const plan = planAccounts([request({ database: 'orders' })], server([owned()], ['shop']));
      assert.deepEqual(
        plan.statements.map((s) => [s.type, 'on' in s ? s.on : 'database' in s ? s.database : '']),
        [
          ['createDatabase', 'orders'],
          ['revoke', '`shop`.*'],
          ['grant', '`orders`.*'],
        ],
      );
      assert.ok(!plan.statements.some((s) => s.type === 'dropUser'));
    });

    it('revokes anything extra: global privileges, other databases, tables, the grant option', () => {
      const extra = [
        ...granted('shop', 'readWrite'),
        { on: '*.*', privilege: 'SUPER' },
        { on: '*.*', privilege: 'PROCESS' },
        { on: '`mysql`.*', privilege: 'SELECT' },
        { on: '`shop`.*', privilege: 'GRANT OPTION' },
        { on: '`shop`.*', privilege: 'EVENT' },
        { on: '`other`.`t`', privilege: 'SELECT' },
      ];
      const plan = planAccounts([request()], server([owned({ privileges: extra })]));
      assert.deepEqual(
        plan.statements.map((s) => (s.type === 'revoke' ? `${s.on}: ${s.privileges.join(', ')}` : s.type)),
        ['*.*: PROCESS, SUPER', '`mysql`.*: SELECT', '`other`.`t`: SELECT', '`shop`.*: EVENT, GRANT OPTION'],
      );
      assert.equal(plan.outcomes[0]?.state, 'ready');
    });

    it('an App that no longer binds (deleted, or bound elsewhere): its account is dropped, its database kept', () => {
      const plan = planAccounts([], server([owned()]));
      assert.deepEqual(plan.statements, [{ type: 'dropUser', user: USER, app: 'shop/web' }]);
      assert.deepEqual(plan.outcomes, []);
    });

    it('an App whose password Secret is not there yet: its account is kept as it is, reported pending', () => {
      const plan = planAccounts([request({ password: undefined })], server([owned({ fingerprint: 'old' })]));
      assert.deepEqual(plan.statements, []);
      assert.equal(plan.outcomes[0]?.state, 'pending');
      assert.deepEqual(kinds([request({ password: undefined })], server([], [])), []);
    });

    it("an account of that name that is not recon8s's is never touched: the App is told", () => {
      const theirs = owned({ app: undefined, fingerprint: undefined, privileges: [{ on: '*.*', privilege: 'SUPER' }] });
      const plan = planAccounts([request()], server([theirs], []));
      assert.deepEqual(plan.statements, []);
      assert.equal(plan.outcomes[0]?.state, 'conflict');
      assert.match(plan.outcomes[0]?.message ?? '', /was not created by recon8s; it is left alone/);
      // Nor dropped when no App asks for it.
      assert.deepEqual(kinds([], server([theirs])), []);
    });

    it('an account of that name that another App owns is not taken over: kept while that App binds, else dropped', () => {
      const theirs = owned({ app: 'other/web' });
      const both = planAccounts([request(), request({ app: 'other/web' })], server([theirs]));
      assert.deepEqual(both.statements, []);
      assert.equal(both.outcomes.find((o) => o.app === 'shop/web')?.state, 'conflict');
      assert.match(both.outcomes.find((o) => o.app === 'shop/web')?.message ?? '', /belongs to App other\/web/);
      const alone = planAccounts([request()], server([theirs]));
      assert.deepEqual(alone.statements, [{ type: 'dropUser', user: USER, app: 'other/web' }]);
      assert.equal(alone.outcomes[0]?.state, 'conflict');
    });

    it('over every combination of binding, account and password state: only owned, unwanted accounts are dropped', () => {
      const accessStates = [undefined, 'readWrite', 'readOnly'] as const;
      const passwordStates = [undefined, PASSWORD];
      const accountStates = ['none', 'owned', 'ownedOtherPassword', 'foreign', 'otherApp'] as const;
      for (const access of accessStates)
        for (const password of passwordStates)
          for (const account of accountStates) {
            const requests = access ? [request({ access, password })] : [];
            const accounts =
              account === 'none'
                ? []
                : [
                    owned({
                      app: account === 'foreign' ? undefined : account === 'otherApp' ? 'x/y' : 'shop/web',
                      fingerprint: account === 'ownedOtherPassword' ? 'x' : passwordFingerprint(USER, PASSWORD),
                    }),
                  ];
            const plan = planAccounts(requests, server(accounts, []));
            const label = JSON.stringify({ access, password: password !== undefined, account });
            const drops = plan.statements.filter((s) => s.type === 'dropUser');
            const ownedUnwanted = access === undefined && (account === 'owned' || account === 'ownedOtherPassword');
            const otherAppsAccount = account === 'otherApp';
            assert.equal(drops.length, ownedUnwanted || otherAppsAccount ? 1 : 0, label);
            // Never a statement to an account recon8s does not own.
            if (account === 'foreign') assert.deepEqual(plan.statements, [], label);
            // Nothing is created or changed without a password.
            if (password === undefined) assert.ok(!plan.statements.some((s) => s.type !== 'dropUser'), label);
            // Each request has exactly one outcome, ready only when its statements make it so.
            assert.equal(plan.outcomes.length, requests.length, label);
            const ready = plan.outcomes[0]?.state === 'ready';
            if (access)
              assert.equal(ready, password !== undefined && (account === 'none' || account.startsWith('owned')), label);
            if (plan.statements.some((s) => s.type === 'dropUser' && s.app === 'shop/web'))
              assert.equal(access, undefined);
          }
    });
  });
});
