// The public API of recon8s: `import * as recon8s from 'recon8s'`.
export { App } from './app/app.js';
export type { AppProps } from './app/app.js';
export { ManagedApp } from './app/managed-app.js';
export { MySQLCluster } from './mysql/mysql-cluster.js';
export type { MySQLClusterProps, GrantOptions } from './mysql/mysql-cluster.js';
export {
  BINDING_SECRET_KEYS as DATABASE_BINDING_SECRET_KEYS,
  DATABASE_ACCESS,
  DATABASE_ENV,
  SYSTEM_SCHEMAS as MYSQL_SYSTEM_SCHEMAS,
  databaseBindingSecretName,
  PASSWORD_NEXT_KEY,
  PASSWORD_NEXT_REVISION_ANNOTATION,
  PASSWORD_REVISION_ANNOTATION,
  ROTATE_CREDENTIALS_ANNOTATION,
} from './app/database.js';
export type { DatabaseAccess } from './app/database.js';
export {
  ALLOW_ANY,
  ALLOW_LIST_ENTRY_HINT,
  ALLOW_LIST_ENTRY_PATTERN,
  allowListAllows,
  allowListProblems,
  allowsAny,
} from './app/reference-allow-list.js';
export { CustomResourceDefinition, Recon8sCrds, crdManifest, APPLYSET_PARENT_TYPE_LABEL } from './crd.js';
export type { CustomResourceDefinitionProps } from './crd.js';
export { render, KINDS } from './render.js';
export type {
  AppResource,
  KubernetesObject,
  MySQLClusterResource,
  Recon8sResource,
  RenderInstall,
  ResourceMetadata,
} from './render.js';
export { DEFAULT_OPERATOR_PODS } from './common/operator-install.js';
export type { OperatorPods } from './common/operator-install.js';
export { BOUND_CLUSTER_LABEL as MYSQL_BOUND_CLUSTER_LABEL } from './mysql/layout.js';
export { APP } from './app/spec.js';
export {
  MYSQL_CLUSTER,
  SUPPORTED_MYSQL_VERSIONS,
  END_OF_LIFE_MYSQL_VERSIONS,
  OBJECT_STORE_SECRET_KEYS as MYSQL_OBJECT_STORE_SECRET_KEYS,
} from './mysql/spec.js';
export { resolveMySQLClusterSpec, semiSyncWaitCount } from './mysql/settings.js';
export {
  GAVE_UP_PREFIX as MYSQL_GAVE_UP_PREFIX,
  MEMBER_REPORTS as MYSQL_MEMBER_REPORTS,
  STORE_REPORTS as MYSQL_STORE_REPORTS,
} from './mysql/layout.js';
export { VALUE_GRAMMARS as MYSQL_VALUE_GRAMMARS } from './mysql/grammar.js';
export type { ValueGrammarName as MySQLValueGrammarName } from './mysql/grammar.js';
export { InvalidSpecError, formatProblem } from './schema/validate.js';
export type { Problem } from './schema/validate.js';
export type { KindDefinition, ResourceType } from './schema/schema.js';
export { DNS_LABEL_PATTERN, QUALIFIED_KEY_PATTERN } from './schema/schema.js';
export {
  clusterNames as mysqlClusterNames,
  SECRET_KEYS as MYSQL_SECRET_KEYS,
  HISTORY_KEYS as MYSQL_HISTORY_KEYS,
  ADMIN_USER as MYSQL_ADMIN_USER,
  BACKUP_USER as MYSQL_BACKUP_USER,
  CLONE_USER as MYSQL_CLONE_USER,
  REPLICATION_USER as MYSQL_REPLICATION_USER,
  MYSQL_PORT,
  MYSQL_BOOTSTRAP_CONTAINER,
  MYSQL_CONTAINER,
  TLS_CA_PATH as MYSQL_TLS_CA_PATH,
  ROLE_LABEL as MYSQL_ROLE_LABEL,
  ROLES as MYSQL_ROLES,
  SWITCHOVER_ANNOTATION as MYSQL_SWITCHOVER_ANNOTATION,
  REPROVISION_ANNOTATION as MYSQL_REPROVISION_ANNOTATION,
  NEXT_PASSWORD_SUFFIX as MYSQL_NEXT_PASSWORD_SUFFIX,
  CREDENTIALS_REVISION_KEY as MYSQL_CREDENTIALS_REVISION_KEY,
  INITIAL_CREDENTIALS_REVISION as MYSQL_INITIAL_CREDENTIALS_REVISION,
  ROTATED_ACCOUNTS_ANNOTATION as MYSQL_ROTATED_ACCOUNTS_ANNOTATION,
  AGENT_HTTP_PATHS as MYSQL_AGENT_HTTP_PATHS,
  AGENT_PORT as MYSQL_AGENT_PORT,
} from './mysql/layout.js';
export type { MySQLClusterNames } from './mysql/layout.js';
export { MANAGED_BY } from './common/metadata.js';
export {
  OperatorChart,
  childRules,
  CHILD_VERBS,
  CONTROLLER_ARGS,
  CREDENTIALS_CLUSTER_ROLE,
  DEFAULT_OPERATOR_IMAGE,
  DEFAULT_OPERATOR_NAMESPACE,
  DEFAULT_OPERATOR_REPLICAS,
  DEFAULT_OPERATOR_RESOURCES,
  HEALTH_PORT,
  LEADER_ELECTION_LEASE,
  LEADER_ELECTION_ROLE,
  METRICS_PORT,
  METRICS_SERVICE,
  OPERATOR_NAME,
  OPERATOR_UID,
  operatorNames,
} from './operator/operator-chart.js';
export type { OperatorChartProps, OperatorNames, OperatorResources } from './operator/operator-chart.js';
export { Recon8sAlertRules, alertRules, DEFAULT_ALERT_THRESHOLDS } from './operator/alert-rules.js';
export {
  MySQLPodMonitor,
  EXPORTER_COLLECTORS,
  EXPORTER_METRICS,
  METRICS_LABEL,
  METRICS_PORT_NAME,
} from './mysql/exporter.js';
export type { MySQLPodMonitorProps } from './mysql/exporter.js';
export {
  Recon8sDashboard,
  grafanaDashboard,
  dashboardQueries,
  CONTROLLER_METRICS,
  DASHBOARD_METRICS,
} from './operator/dashboard.js';
export type { DashboardProps, DashboardTarget } from './operator/dashboard.js';
export type { AlertRule, AlertRulesProps } from './operator/alert-rules.js';
export type {
  AppSpec,
  AppPort,
  AppAutoscaling,
  AppSecurityContext,
  EnvVar,
  EnvVarSource,
  SecretKeySelector,
  ConfigMapKeySelector,
  Probe,
  HttpGetAction,
  TcpSocketAction,
  ExecAction,
  ResourceRequirements,
  ResourceList,
  AppStatus,
  AppDatabase,
  AppBindingStatus,
  Condition,
} from './app/spec.generated.js';
export type {
  MySQLClusterSpec,
  ResolvedMySQLClusterSpec,
  MySQLStorage,
  MySQLBackup,
  MySQLObjectStore,
  MySQLRestore,
  MySQLPvcRetention,
  MySQLClusterStatus,
  MySQLMemberStatus,
  MySQLAccountStatus,
  MySQLCredentialRotationStatus,
  MySQLSwitchoverStatus,
  MySQLPrimaryTermStatus,
  MySQLFailoverStatus,
  MySQLBackupStatus,
  MySQLRestoreStatus,
  MySQLRestoreFailureStatus,
} from './mysql/spec.generated.js';
