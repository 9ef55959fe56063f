import type { OperatorChartProps } from '../constructs/index.js';

/**
 * The operator install's props from the environment of `cdk8s synth` (all optional):
 * RECON8S_OPERATOR_NAMESPACE, RECON8S_OPERATOR_IMAGE, RECON8S_OPERATOR_REPLICAS,
 * RECON8S_CREDENTIALS_NAMESPACES and RECON8S_WATCHED_NAMESPACES (comma-separated), e.g.
 * `RECON8S_CREDENTIALS_NAMESPACES=shop,billing npm run synth`.
 */
export function operatorPropsFromEnv(env: Readonly<Record<string, string | undefined>>): OperatorChartProps {
  const nonEmpty = (v: string | undefined): string | undefined =>
    v === undefined || v.trim() === '' ? undefined : v.trim();
  const list = (v: string | undefined): string[] | undefined =>
    nonEmpty(v)
      ?.split(',')
      .map((n) => n.trim())
      .filter((n) => n !== '');
  const replicas = nonEmpty(env.RECON8S_OPERATOR_REPLICAS);
  return {
    namespace: nonEmpty(env.RECON8S_OPERATOR_NAMESPACE),
    image: nonEmpty(env.RECON8S_OPERATOR_IMAGE),
    replicas: replicas === undefined ? undefined : Number(replicas),
    credentialsNamespaces: list(env.RECON8S_CREDENTIALS_NAMESPACES),
    watchedNamespaces: list(env.RECON8S_WATCHED_NAMESPACES),
  };
}
