import { CoreV1Api } from '@kubernetes/client-node';
import { DEFAULT_CONTROLLERS, startControlPlane } from '../controlplane/index.js';
import type { ControlPlane } from '../controlplane/index.js';

/**
 * Bound on the hook that gets the shared control plane. The first use may build the binaries (minutes,
 * once per machine, see build-binaries.sh); the start itself is bounded by startControlPlane's own timeout.
 */
export const SHARED_CONTROL_PLANE_HOOK_TIMEOUT_MS = 60 * 60_000;

let shared: Promise<ControlPlane> | undefined;

/**
 * The one control plane of this test run, shared by all integration test files: started on first use
 * (never when only unit tests run), stopped by test/hooks.ts after the last test. It runs
 * DEFAULT_CONTROLLERS (garbage collection, namespace deletion, service accounts). A failed start is
 * remembered, so every later test fails at once with the same error instead of waiting again.
 */
export function sharedControlPlane(): Promise<ControlPlane> {
  shared ??= startControlPlane({ controllers: DEFAULT_CONTROLLERS });
  return shared;
}

/** For test/hooks.ts. */
export async function stopSharedControlPlane(): Promise<void> {
  const started = shared;
  shared = undefined;
  const controlPlane = await started?.catch(() => undefined);
  await controlPlane?.stop();
}

/**
 * Call inside a `describe`: a `before` hook gets the shared control plane (with a timeout long enough
 * for a first-time build), and the returned getter hands it to the tests.
 *
 *     describe('my controller', () => {
 *       const controlPlane = useSharedControlPlane();
 *       it('...', async () => { const kc = controlPlane().kubeConfig(); ... });
 *     });
 */
export function useSharedControlPlane(): () => ControlPlane {
  let controlPlane: ControlPlane | undefined;
  before(async function (this: Mocha.Context) {
    this.timeout(SHARED_CONTROL_PLANE_HOOK_TIMEOUT_MS);
    controlPlane = await sharedControlPlane();
  });
  return () => {
    if (!controlPlane)
      throw new Error('useSharedControlPlane(): the control plane is only there once the before hook has run.');
    return controlPlane;
  };
}

export interface FreshNamespaceOptions {
  readonly labels?: Readonly<Record<string, string>>;
  /** The control plane to create it in; default the shared one. */
  readonly controlPlane?: ControlPlane;
}

/**
 * Creates a namespace whose name starts with `prefix` and is unique in this control plane (the API
 * server picks the suffix, via generateName) and returns its name. Tests that each work in their own
 * namespace need no cleanup and cannot see each other's objects.
 */
export async function freshNamespace(prefix: string, options: FreshNamespaceOptions = {}): Promise<string> {
  const controlPlane = options.controlPlane ?? (await sharedControlPlane());
  const core = controlPlane.kubeConfig().makeApiClient(CoreV1Api);
  // A DNS label of at most 63 characters; the API server appends 5 characters.
  const stem = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 56)
    .replace(/-+$/, '');
  const namespace = await core.createNamespace({
    body: { metadata: { generateName: `${stem === '' ? 'test' : stem}-`, labels: { ...options.labels } } },
  });
  const name = namespace.metadata?.name;
  if (name === undefined) throw new Error(`Creating a namespace with prefix ${prefix} returned no name.`);
  return name;
}
