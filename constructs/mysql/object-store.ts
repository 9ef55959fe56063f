// What a pod needs to use an object store: the rclone client, and its configuration from the spec and
// the credentials Secret (see scripts/store.sh for the store's layout); and what a pod needs to encrypt
// with rclone's crypt (scripts/encryption.sh), in a store or on a backup volume: rclone and the key.
import { k8s } from 'cdk8s-plus-28';
import { containerSecurityContext } from '../common/security.js';
import { PATHS } from './layout.js';
import type { ResolvedMySQLObjectStore, ResolvedMySQLObjectStoreEncryptionKeyRef } from './spec.generated.js';
import { OBJECT_STORE_SECRET_KEYS } from './spec.js';

export const TOOLS_VOLUME = 'tools';
const STORE_KEY_VOLUME = 'store-key';

const TOOLS_RESOURCES: k8s.ResourceRequirements = {
  requests: { cpu: k8s.Quantity.fromString('10m'), memory: k8s.Quantity.fromString('16Mi') },
  limits: { memory: k8s.Quantity.fromString('64Mi') },
};

/** The store's location and credentials as the scripts read them: nothing secret by value. */
export function storeEnv(store: ResolvedMySQLObjectStore): k8s.EnvVar[] {
  const key = (name: string, secretKey: string): k8s.EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: store.credentialsSecretName, key: secretKey } },
  });
  return [
    { name: 'STORE_BUCKET', value: store.bucket },
    { name: 'STORE_PREFIX', value: store.prefix },
    ...(store.endpoint ? [{ name: 'RCLONE_CONFIG_STORE_ENDPOINT', value: store.endpoint }] : []),
    { name: 'RCLONE_CONFIG_STORE_REGION', value: store.region },
    { name: 'RCLONE_CONFIG_STORE_FORCE_PATH_STYLE', value: String(store.forcePathStyle) },
    key('RCLONE_CONFIG_STORE_ACCESS_KEY_ID', OBJECT_STORE_SECRET_KEYS.accessKeyId),
    key('RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY', OBJECT_STORE_SECRET_KEYS.secretAccessKey),
    // The encryption key's file: the key itself is never an environment variable (scripts/store.sh).
    ...(store.encryption ? [{ name: 'STORE_ENCRYPTION_KEY_FILE', value: PATHS.storeKeyFile }] : []),
  ];
}

/** Copies rclone from `image` into the tools volume, for the containers that use the store or encrypt. */
export function rcloneInitContainer(image: string, imagePullPolicy: string): k8s.Container {
  return {
    name: 'rclone',
    image,
    imagePullPolicy,
    command: ['sh', '-c', `cp "$(command -v rclone)" ${PATHS.tools}/rclone`],
    resources: TOOLS_RESOURCES,
    securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
    volumeMounts: [{ name: TOOLS_VOLUME, mountPath: PATHS.tools }],
  };
}

export const toolsVolume: k8s.Volume = { name: TOOLS_VOLUME, emptyDir: {} };
export const toolsMount: k8s.VolumeMount = { name: TOOLS_VOLUME, mountPath: PATHS.tools, readOnly: true };

/**
 * The volume `name` of an encryption key: the one key of the Secret `ref` names, as the file `key`,
 * readable by the mysql group alone (fsGroup). A missing Secret or key keeps the pod from starting,
 * which the Job's events say: no job runs without its key.
 */
export function encryptionKeyVolume(name: string, ref: ResolvedMySQLObjectStoreEncryptionKeyRef): k8s.Volume {
  return { name, secret: { secretName: ref.name, items: [{ key: ref.key, path: 'key' }], defaultMode: 0o440 } };
}

/** The volumes of a pod that uses the store: the tools (rclone), and with encryption its key. */
export function storeVolumes(store: ResolvedMySQLObjectStore): k8s.Volume[] {
  const key = store.encryption?.secretRef;
  return [toolsVolume, ...(key ? [encryptionKeyVolume(STORE_KEY_VOLUME, key)] : [])];
}

/** The mounts of {@link storeVolumes} in a container that uses the store. */
export function storeMounts(store: ResolvedMySQLObjectStore): k8s.VolumeMount[] {
  return [
    toolsMount,
    ...(store.encryption ? [{ name: STORE_KEY_VOLUME, mountPath: PATHS.storeKey, readOnly: true }] : []),
  ];
}
