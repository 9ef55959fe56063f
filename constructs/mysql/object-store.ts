// What a pod needs to use an object store: the rclone client, and its configuration from the spec and
// the credentials Secret (see scripts/store.sh for the store's layout).
import { k8s } from 'cdk8s-plus-28';
import { containerSecurityContext } from '../common/security.js';
import { PATHS } from './layout.js';
import type { ResolvedMySQLObjectStore } from './spec.generated.js';
import { OBJECT_STORE_SECRET_KEYS } from './spec.js';

export const TOOLS_VOLUME = 'tools';

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
  ];
}

/** Copies rclone from its image into the tools volume, for the containers that use the store. */
export function rcloneInitContainer(store: ResolvedMySQLObjectStore, imagePullPolicy: string): k8s.Container {
  return {
    name: 'rclone',
    image: store.rcloneImage,
    imagePullPolicy,
    command: ['sh', '-c', `cp "$(command -v rclone)" ${PATHS.tools}/rclone`],
    resources: TOOLS_RESOURCES,
    securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
    volumeMounts: [{ name: TOOLS_VOLUME, mountPath: PATHS.tools }],
  };
}

export const toolsVolume: k8s.Volume = { name: TOOLS_VOLUME, emptyDir: {} };
export const toolsMount: k8s.VolumeMount = { name: TOOLS_VOLUME, mountPath: PATHS.tools, readOnly: true };
