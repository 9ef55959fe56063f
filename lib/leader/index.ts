export { createLeaderElector } from './elector.js';
export type { LeaderElectionHooks, LeaderElector, LeaderElectorOptions } from './elector.js';
export { fromSpec, kubeLeaseLock, toSpec } from './lock.js';
export type { LeaderElectionRecord, LeaseLock, LockedRecord } from './lock.js';
