// Synthesizes a MySQLCluster in memory and finds its objects, typed as the Kubernetes API types.
import assert from 'node:assert/strict';
import * as cdk8s from 'cdk8s';
import type {
  KubernetesObject,
  V1ConfigMap,
  V1Container,
  V1CronJob,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import { MySQLCluster } from '../../../constructs/mysql/mysql-cluster.js';
import { MySQLClusterObjects } from '../../../constructs/mysql/mysql-cluster-objects.js';
import { InvalidSpecError } from '../../../constructs/schema/validate.js';
import type { MySQLClusterSpec as MySQLClusterProps } from '../../../constructs/mysql/spec.generated.js';

export interface MySQLSynth {
  readonly cluster: MySQLClusterObjects;
  readonly objects: KubernetesObject[];
  /** The chart's JSON, as text: what determinism and "no secret anywhere" are judged on. */
  readonly json: string;
  readonly statefulSet: V1StatefulSet;
  readonly podSpec: V1PodSpec;
  readonly service: (name: string) => V1Service;
  readonly configMap: (name: string) => V1ConfigMap;
  readonly disruptionBudget: V1PodDisruptionBudget;
  readonly cronJob: V1CronJob | undefined;
  /** A container or init container of the StatefulSet's pod template. */
  readonly container: (name: string) => V1Container;
}

export function synthMySQL(props?: MySQLClusterProps, name = 'shop'): MySQLSynth {
  const app = new cdk8s.App();
  const chart = new cdk8s.Chart(app, 'test', { namespace: 'db' });
  const cluster = new MySQLClusterObjects(chart, name, props);
  const objects = chart.toJson() as KubernetesObject[];
  const find = <T>(kind: string, objectName: string): T => {
    const found = objects.filter((o) => o.kind === kind && o.metadata?.name === objectName);
    assert.equal(found.length, 1, `expected one ${kind} named ${objectName}, found ${found.length}`);
    return found[0] as T;
  };
  const statefulSet = find<V1StatefulSet>('StatefulSet', name);
  const podSpec = statefulSet.spec?.template.spec;
  assert.ok(podSpec, 'the StatefulSet has a pod template');
  const cronJobs = objects.filter((o) => o.kind === 'CronJob') as V1CronJob[];
  return {
    cluster,
    objects,
    json: JSON.stringify(objects),
    statefulSet,
    podSpec,
    service: (n) => find<V1Service>('Service', n),
    configMap: (n) => find<V1ConfigMap>('ConfigMap', n),
    disruptionBudget: find<V1PodDisruptionBudget>('PodDisruptionBudget', `${name}-mysql`),
    cronJob: cronJobs[0],
    container: (n) => {
      const c = [...(podSpec.initContainers ?? []), ...podSpec.containers].find((x) => x.name === n);
      assert.ok(c, `the pod template has a container named ${n}`);
      return c;
    },
  };
}

/** Every container of a pod spec, init containers first. */
export function allContainers(spec: V1PodSpec): V1Container[] {
  return [...(spec.initContainers ?? []), ...spec.containers];
}

/** Whether a selector's labels all appear among a pod's labels. */
export function selects(
  selector: Readonly<Record<string, string>> | undefined,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
}

/**
 * Constructs a MySQLCluster (the resource a user writes) that must be refused; returns the error and
 * the chart it was added to. (The objects the controller renders validate with the same function.)
 */
export function invalidMySQL(props: unknown, name = 'shop'): { error: InvalidSpecError; chart: cdk8s.Chart } {
  const chart = new cdk8s.Chart(new cdk8s.App(), 'test', { namespace: 'db' });
  let caught: unknown;
  try {
    new MySQLCluster(chart, name, props as MySQLClusterProps);
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof InvalidSpecError, `expected an InvalidSpecError, got ${String(caught)}`);
  return { error: caught, chart };
}

export interface ExpectedMySQLProblem {
  /** The field path, as kubectl names it. */
  readonly field: string;
  /** The received value; absent for a missing field. */
  readonly value?: unknown;
  /** What the message must say was expected. */
  readonly expected: RegExp;
}

/** The error lists the problem, and its message names the field, shows the value received and says what was expected. */
export function assertMySQLProblem(error: InvalidSpecError, want: ExpectedMySQLProblem): void {
  const problem = error.problems.find((p) => p.field === want.field && want.expected.test(p.expected));
  assert.ok(problem, `no problem for ${want.field} matching ${want.expected} in:\n${error.message}`);
  const line = error.message.split('\n').find((l) => l.includes(`- ${want.field}: `) && want.expected.test(l));
  assert.ok(line, `the message has no line for ${want.field}:\n${error.message}`);
  if ('value' in want) {
    assert.deepEqual(problem.value, want.value);
    const json = JSON.stringify(want.value);
    const shown = json.length > 80 ? `${json.slice(0, 77)}...` : json;
    assert.ok(
      line.includes(`${want.field}: got ${shown}, expected `),
      `the message does not show the value received:\n${line}`,
    );
  } else {
    assert.ok(
      line.includes(`${want.field}: missing, expected `),
      `the message does not say the field is missing:\n${line}`,
    );
  }
}
