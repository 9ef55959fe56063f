// Helpers for the App construct tests: synthesize in memory (never to disk) and pick objects out.
import assert from 'node:assert/strict';
import * as cdk8s from 'cdk8s';
import type { Construct } from 'constructs';
import type {
  V1Container,
  V1Deployment,
  V1PodDisruptionBudget,
  V1PodSpec,
  V2HorizontalPodAutoscaler,
  V1Service,
} from '@kubernetes/client-node';
import { App } from '../../../constructs/app/app.js';
import type { AppProps } from '../../../constructs/app/app.js';
import type { KubernetesObject } from '../../../constructs/common/custom-resource.js';
import { InvalidSpecError } from '../../../constructs/schema/validate.js';

/** A synthesized object, as plain JSON. */
export type Manifest = KubernetesObject;

export interface AppSynth {
  readonly app: App;
  readonly chart: cdk8s.Chart;
  readonly objects: Manifest[];
}

export interface SynthOptions {
  /** The construct id, i.e. the App's name. @default 'web' */
  readonly id?: string;
  /** The chart's namespace; null for a chart without one. @default 'ns' */
  readonly namespace?: string | null;
  /** Where to put the App inside the chart (to show the construct path does not matter). */
  readonly scope?: (chart: cdk8s.Chart) => Construct;
}

/** One App in a fresh chart, synthesized in-process. */
export function synthApp(props: AppProps, opts: SynthOptions = {}): AppSynth {
  const chart = newChart(opts.namespace === undefined ? 'ns' : opts.namespace);
  const app = new App(opts.scope ? opts.scope(chart) : chart, opts.id ?? 'web', props);
  return { app, chart, objects: chart.toJson() as Manifest[] };
}

export function newChart(namespace: string | null = 'ns'): cdk8s.Chart {
  return new cdk8s.Chart(new cdk8s.App(), 'test', namespace === null ? {} : { namespace });
}

export function kinds(s: AppSynth): string[] {
  return s.objects.map((o) => o.kind);
}

/** The only object of a kind, asserting there is exactly one. */
function only<T>(s: AppSynth, kind: string): T {
  const found = s.objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `expected exactly one ${kind}, got ${found.length} in ${kinds(s).join(', ')}`);
  return found[0] as unknown as T;
}

export function has(s: AppSynth, kind: string): boolean {
  return s.objects.some((o) => o.kind === kind);
}

export const deploymentOf = (s: AppSynth): V1Deployment => only<V1Deployment>(s, 'Deployment');
export const serviceOf = (s: AppSynth): V1Service => only<V1Service>(s, 'Service');
export const autoscalerOf = (s: AppSynth): V2HorizontalPodAutoscaler =>
  only<V2HorizontalPodAutoscaler>(s, 'HorizontalPodAutoscaler');
export const disruptionBudgetOf = (s: AppSynth): V1PodDisruptionBudget =>
  only<V1PodDisruptionBudget>(s, 'PodDisruptionBudget');

export function podSpecOf(s: AppSynth): V1PodSpec {
  const pod = deploymentOf(s).spec?.template.spec;
  assert.ok(pod, 'the Deployment has no pod template spec');
  return pod;
}

/** The application container (asserting it is the only one). */
export function containerOf(s: AppSynth): V1Container {
  const containers = podSpecOf(s).containers;
  assert.equal(containers.length, 1);
  return containers[0];
}

/** Every path in the JSON whose value is an empty map or list (allowed: what only exists as an empty map). */
export function emptyValues(json: unknown, path = '', allowed: readonly RegExp[] = [/\.emptyDir$/]): string[] {
  if (Array.isArray(json)) {
    return json.length === 0 ? [path] : json.flatMap((v, i) => emptyValues(v, `${path}[${i}]`, allowed));
  }
  if (typeof json === 'object' && json !== null) {
    const entries = Object.entries(json);
    if (entries.length === 0) return allowed.some((a) => a.test(path)) ? [] : [path];
    return entries.flatMap(([k, v]) => emptyValues(v, `${path}.${k}`, allowed));
  }
  return json === null || json === undefined ? [path] : [];
}

/** Builds an App from props that need not type-check, and returns the InvalidSpecError it must throw. */
export function invalidApp(props: unknown, id = 'web'): { error: InvalidSpecError; chart: cdk8s.Chart } {
  const chart = newChart();
  let caught: unknown;
  try {
    new App(chart, id, props as AppProps);
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof InvalidSpecError, `expected an InvalidSpecError, got ${String(caught)}`);
  return { error: caught, chart };
}

export interface ExpectedProblem {
  /** The field path, as kubectl names it. */
  readonly field: string;
  /** The received value; absent for a missing field. */
  readonly value?: unknown;
  /** What the message must say was expected. */
  readonly expected: RegExp;
}

/** The error names the field, shows the received value and says what was expected, in its problems and its message. */
export function assertProblem(error: InvalidSpecError, want: ExpectedProblem): void {
  const problem = error.problems.find((p) => p.field === want.field && want.expected.test(p.expected));
  assert.ok(problem, `no problem for ${want.field} matching ${want.expected} in:\n${error.message}`);
  const line = error.message.split('\n').find((l) => l.includes(`- ${want.field}: `) && want.expected.test(l));
  assert.ok(line, `the message has no line for ${want.field}:\n${error.message}`);
  if ('value' in want) {
    assert.deepEqual(problem.value, want.value);
    // Long values are abbreviated to 80 characters so that one problem stays one readable line.
    const json = JSON.stringify(want.value);
    const shown = json.length > 80 ? `${json.slice(0, 77)}...` : json;
    assert.ok(
      line.includes(`${want.field}: got ${shown}, expected `),
      `the message does not show the received value:\n${line}`,
    );
  } else {
    assert.ok(
      line.includes(`${want.field}: missing, expected `),
      `the message does not say the field is missing:\n${line}`,
    );
  }
}
