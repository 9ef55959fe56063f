// What an App may name of its namespace: creating an App is creating pods, and a pod may run as any
// ServiceAccount and read any Secret of its namespace. An operator install may narrow that to an
// allow-list (OperatorChart's appServiceAccounts and appSecrets, the controller's --app-service-accounts
// and --app-secrets); the controller refuses an App whose pods would name anything else
// (lib/controller/app/reference-policy.ts). The grammar of an entry is here, once, for both halves:
//
//   *                any, in every namespace (the default: an App may name what a pod may)
//   NAMESPACE/*      any, in that namespace
//   NAME             that name, in every namespace
//   NAMESPACE/NAME   that one
//
// An empty list allows none (Apps run as their namespace's default ServiceAccount, and name no Secret
// but their own database binding).

/** The allow-list that allows everything: what an App may name without a restriction. */
export const ALLOW_ANY: readonly string[] = ['*'];

const NAMESPACE = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const NAME = '[a-z0-9]([-a-z0-9.]*[a-z0-9])?';
/** One entry of an allow-list (RE2 and ECMAScript alike: the Helm chart checks it too). */
export const ALLOW_LIST_ENTRY_PATTERN = `^(\\*|(${NAMESPACE}/)?(\\*|${NAME}))$`;
const ENTRY = new RegExp(ALLOW_LIST_ENTRY_PATTERN);
export const ALLOW_LIST_ENTRY_HINT = '"*", "NAMESPACE/*", "NAME" or "NAMESPACE/NAME" (lower-case DNS names)';

/** What is wrong with an allow-list, one message per bad entry, naming `field` and the entry. */
export function allowListProblems(field: string, entries: readonly string[]): string[] {
  return entries
    .filter((e) => !ENTRY.test(e))
    .map((e) => `${field}: ${JSON.stringify(e)} is not an allow-list entry: expected ${ALLOW_LIST_ENTRY_HINT}`);
}

/** Whether the allow-list lets an App of `namespace` name `name`. */
export function allowListAllows(entries: readonly string[], namespace: string, name: string): boolean {
  return entries.some((e) => e === '*' || e === name || e === `${namespace}/*` || e === `${namespace}/${name}`);
}

/** Whether the list is the default, which allows everything (and so needs no flag). */
export function allowsAny(entries: readonly string[]): boolean {
  return entries.includes('*');
}
