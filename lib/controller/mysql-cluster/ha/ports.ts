// The ports of a MySQLCluster's HA loop: what it does on a member over SQL, and how it reaches one.
// A contract module (types only): the loop and its helpers import it, and tests fake what it declares.
import type { MemberSession, connectMember } from '../../../mysql/member-sql.js';

/** What the loop does on a member over SQL: a MemberSession (or a fake, in tests of its steps). */
export type MemberActions = Pick<MemberSession, keyof MemberSession>;

/** How the loop reaches a member. */
export type ConnectMember = (o: Parameters<typeof connectMember>[0]) => Promise<MemberActions>;
