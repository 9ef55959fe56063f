// A merge patch of a Secret as the API server applies it (a null removes a key), and the new
// resourceVersion it gets: for the fakes of the tests that write Secrets.
import type { V1Secret } from '@kubernetes/client-node';

type Values = Readonly<Record<string, string | null>>;

const merged = (base: Readonly<Record<string, string>> | undefined, patch: Values | undefined) =>
  Object.fromEntries(Object.entries({ ...base, ...patch }).filter((e): e is [string, string] => e[1] !== null));

export function mergeSecret(
  secret: V1Secret,
  patch: { readonly metadata?: { readonly annotations?: Values }; readonly data?: Values },
): V1Secret {
  return {
    ...secret,
    metadata: {
      ...secret.metadata,
      annotations: merged(secret.metadata?.annotations, patch.metadata?.annotations),
      resourceVersion: String(Number(secret.metadata?.resourceVersion ?? 0) + 1),
    },
    data: merged(secret.data, patch.data),
  };
}
