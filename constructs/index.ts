// The public API of recon8s: `import * as recon8s from 'recon8s'`.
export { App } from './app/app.js';
export type { AppProps } from './app/app.js';
export { MySQLCluster } from './mysql/mysql-cluster.js';
export type { MySQLClusterProps } from './mysql/mysql-cluster.js';
export { CustomResourceDefinition, Recon8sCrds, crdManifest, APPLYSET_PARENT_TYPE_LABEL } from './crd.js';
export type { CustomResourceDefinitionProps } from './crd.js';
export { render, KINDS } from './render.js';
export type { AppResource, KubernetesObject, MySQLClusterResource, Recon8sResource, ResourceMetadata } from './render.js';
export { APP } from './app/spec.js';
export { MYSQL_CLUSTER, SUPPORTED_MYSQL_VERSIONS, END_OF_LIFE_MYSQL_VERSIONS } from './mysql/spec.js';
export { REPORT_REASONS as MYSQL_MEMBER_REPORTS } from './mysql/reprovision-script.js';
export { InvalidSpecError, formatProblem } from './schema/validate.js';
export type { Problem } from './schema/validate.js';
export type { KindDefinition, ResourceType } from './schema/schema.js';
export { clusterNames as mysqlClusterNames, SECRET_KEYS as MYSQL_SECRET_KEYS } from './mysql/layout.js';
export type { MySQLClusterNames } from './mysql/layout.js';
export { MANAGED_BY } from './common/metadata.js';
export type {
  AppSpec, AppPort, AppAutoscaling, AppSecurityContext, EnvVar, EnvVarSource, SecretKeySelector, ConfigMapKeySelector,
  Probe, HttpGetAction, TcpSocketAction, ExecAction, ResourceRequirements, ResourceList, AppStatus, Condition,
} from './app/spec.generated.js';
export type { MySQLClusterSpec, MySQLStorage, MySQLBackup, MySQLPvcRetention, MySQLClusterStatus } from './mysql/spec.generated.js';
