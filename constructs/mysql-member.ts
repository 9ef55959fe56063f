// The second public entry of the constructs: what the programs inside a member's pod (the agent,
// lib/agent) must agree on with the pod the constructs render — paths, ports, accounts, report
// reasons. It loads no cdk8s: the agent runs in every database pod, and its memory is paid per member.
export {
  ADMIN_GRANTS,
  ADMIN_USER,
  AGENT_HTTP_PATHS,
  AGENT_PORT,
  CREDENTIALS_REVISION_KEY,
  DATA_DIR_NAME,
  EXPORTER_GRANTS,
  EXPORTER_HOST,
  EXPORTER_MAX_CONNECTIONS,
  EXPORTER_USER,
  FORMER_EXPORTER_HOST,
  INITIAL_CREDENTIALS_REVISION,
  MEMBER_REPORTS,
  MYSQL_PORT,
  PATHS as MYSQL_PATHS,
  REPLICATION_USER,
  REPROVISION_ANNOTATION,
  SECRET_KEYS,
} from './mysql/layout.js';
