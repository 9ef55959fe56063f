// Why pods cannot run, as the kubelet and the scheduler say it in the pod status: one pure decision
// (pod, time) → problem, shared by the App and MySQLCluster status (Degraded, Ready, Events), `recon8s
// status` (a member's note) and `recon8s apply` (its timeout message, from the status).
//
// Where the lines are drawn, so that Degraded does not flap with states that pass by themselves:
// - ContainerCreating, PodInitializing, a first run of an init container, a pod the scheduler has not
//   looked at yet, a pod gated by schedulingGates: progress, never a problem.
// - Unschedulable is a problem as soon as the scheduler says so (PodScheduled=False, Unschedulable),
//   unless it nominated a node (a preemption under way frees room).
// - Image pulls: ErrImagePull, ImagePullBackOff, ErrImageNeverPull, InvalidImageName, ImageInspectError
//   are problems at once: the kubelet tried and failed. It alternates between ErrImagePull (a retry) and
//   ImagePullBackOff (waiting to retry), so both read "ImagePullBackOff" with the same error: the status
//   stays the same through the retries instead of being rewritten at each.
// - A crash loop is the kubelet's CrashLoopBackOff, a container whose short run (< CRASH_WINDOW_MS) just
//   ended non-zero, or one that runs again after a second such exit, less than CRASH_WINDOW_MS ago:
//   between back-offs a crashing container runs (and without a readiness probe is even ready), and
//   counting only the back-off would flip Degraded with every restart. It ends by itself when the
//   container stays up that long (recheckInMs). One exit after a long run (a kill, an OOM after days)
//   is not a loop: only the kubelet's own back-off after it, seconds long, is reported.
// - An init container that exited non-zero, waits in back-off, or runs again after such an exit keeps
//   the pod from starting: a problem until it completes.
// - Pods being deleted and pods that finished (Succeeded, Failed: a Deployment replaces an evicted pod,
//   a backup job's failure is reported by its own status) are not looked at.
import type { V1Container, V1ContainerStateTerminated, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { MYSQL_GAVE_UP_PREFIX } from '../../constructs/index.js';

/** Degraded reasons, most fundamental first: the first is the one a condition names. */
export const POD_PROBLEM_REASONS = [
  'ClaimPending',
  'PodUnschedulable',
  'ImagePullFailed',
  'ContainerConfigError',
  'InitContainerFailed',
  'ContainerStartFailed',
  'CrashLoopBackOff',
] as const;

export type PodProblemReason = (typeof POD_PROBLEM_REASONS)[number];

export interface PodProblem {
  readonly pod: string;
  readonly uid: string;
  readonly reason: PodProblemReason;
  /** What `kubectl get pod` would say (Init:ImagePullBackOff, CrashLoopBackOff, Unschedulable). */
  readonly status: string;
  readonly container?: string;
  /** The kubelet's or the scheduler's words, trimmed; never a container's own output. */
  readonly detail: string;
  /** The problem ends by itself after this long if the pod does not change (a crash loop that stopped). */
  readonly recheckInMs?: number;
}

/** How long a container that exited non-zero and runs again counts as crash-looping (the kubelet's longest back-off is 5 min). */
export const CRASH_WINDOW_MS = 5 * 60_000;

/** Details are cut there: a condition names many pods, and an Event note is at most 1 KiB. */
const MAX_DETAIL = 300;

const PULL_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff']);
const IMAGE_FAILURES = new Set(['ErrImageNeverPull', 'InvalidImageName', 'ImageInspectError']);
const START_FAILURES = new Set(['CreateContainerError', 'RunContainerError']);
const CLAIM_WORDS = /persistentvolumeclaim|persistent ?volume|volume node affinity|unbound immediate/i;

/** The one problem of a pod (the first in start order: scheduling, init containers, containers), if any. */
export function podProblem(pod: V1Pod, now: Date): PodProblem | undefined {
  const meta = pod.metadata ?? {};
  const phase = pod.status?.phase;
  if (meta.deletionTimestamp || phase === 'Succeeded' || phase === 'Failed') return undefined;
  const base = { pod: meta.name ?? '', uid: meta.uid ?? meta.name ?? '' };
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable' && !pod.status?.nominatedNodeName) {
    const said = firstSentence(scheduled.message ?? 'no node can run it');
    const claims = claimNames(pod);
    if (CLAIM_WORDS.test(scheduled.message ?? '') && claims.length > 0)
      return {
        ...base,
        reason: 'ClaimPending',
        status: 'Unschedulable',
        detail: cut(`waiting for claim${claims.length > 1 ? 's' : ''} ${claims.join(', ')}: ${said}`),
      };
    return { ...base, reason: 'PodUnschedulable', status: 'Unschedulable', detail: cut(said) };
  }
  const specs = new Map<string, V1Container>(
    [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => [c.name, c]),
  );
  for (const s of pod.status?.initContainerStatuses ?? []) {
    // A sidecar (an init container that always restarts) runs beside the containers: judged like them.
    const sidecar = specs.get(s.name)?.restartPolicy === 'Always';
    const found = sidecar ? containerProblem(s, specs.get(s.name), now) : initProblem(s, specs.get(s.name));
    if (found) return { ...base, ...found, status: sidecar ? found.status : `Init:${found.status}` };
  }
  for (const s of pod.status?.containerStatuses ?? []) {
    const found = containerProblem(s, specs.get(s.name), now);
    if (found) return { ...base, ...found };
  }
  return undefined;
}

type Found = Omit<PodProblem, 'pod' | 'uid'>;

/** What the kubelet says about a container that cannot be created or started, init or not. */
function startProblem(s: V1ContainerStatus, spec: V1Container | undefined): Found | undefined {
  const waiting = s.state?.waiting;
  const reason = waiting?.reason ?? '';
  const container = s.name;
  if (PULL_FAILURES.has(reason))
    return {
      reason: 'ImagePullFailed',
      status: 'ImagePullBackOff',
      container,
      detail: pullDetail(waiting?.message, image(s, spec)),
    };
  if (IMAGE_FAILURES.has(reason))
    return {
      reason: 'ImagePullFailed',
      status: reason,
      container,
      detail: cut(waiting?.message ?? `image "${image(s, spec)}" cannot be used`),
    };
  // The kubelet names what is missing (`secret "db" not found`, `couldn't find key password in Secret
  // ns/db`): names, never values.
  if (reason === 'CreateContainerConfigError')
    return {
      reason: 'ContainerConfigError',
      status: reason,
      container,
      detail: cut(waiting?.message ?? 'its configuration refers to something that does not exist'),
    };
  if (START_FAILURES.has(reason))
    return {
      reason: 'ContainerStartFailed',
      status: reason,
      container,
      detail: cut(waiting?.message ?? 'the runtime cannot start it'),
    };
  return undefined;
}

function initProblem(s: V1ContainerStatus, spec: V1Container | undefined): Found | undefined {
  const started = startProblem(s, spec);
  if (started) return started;
  const failed = [s.state?.terminated, s.lastState?.terminated].find((t) => t && t.exitCode !== 0);
  // Done (exit 0) is not a failure; a first run is progress. A run after a failure is still the failure.
  if (s.state?.terminated?.exitCode === 0 || !failed) return undefined;
  return {
    reason: 'InitContainerFailed',
    status: s.restartCount > 0 || s.state?.waiting ? 'CrashLoopBackOff' : 'Error',
    container: s.name,
    detail: exitDetail(failed),
  };
}

function containerProblem(s: V1ContainerStatus, spec: V1Container | undefined, now: Date): Found | undefined {
  const started = startProblem(s, spec);
  if (started) return started;
  const state = s.state;
  const last = s.lastState?.terminated;
  const status = s.restartCount > 0 || state?.waiting ? 'CrashLoopBackOff' : 'Error';
  if (state?.waiting?.reason === 'CrashLoopBackOff')
    return {
      reason: 'CrashLoopBackOff',
      status,
      container: s.name,
      detail: last ? exitDetail(last) : 'it keeps exiting',
    };
  if (state?.terminated && state.terminated.exitCode !== 0 && shortRun(state.terminated))
    return {
      reason: 'CrashLoopBackOff',
      status,
      container: s.name,
      detail: exitDetail(state.terminated),
    };
  const startedAt = state?.running?.startedAt;
  if (last && last.exitCode !== 0 && shortRun(last) && s.restartCount >= 2 && startedAt) {
    const runningMs = now.getTime() - new Date(startedAt).getTime();
    if (runningMs < CRASH_WINDOW_MS)
      return {
        reason: 'CrashLoopBackOff',
        status,
        container: s.name,
        detail: exitDetail(last),
        recheckInMs: Math.max(CRASH_WINDOW_MS - runningMs, 1_000),
      };
  }
  return undefined;
}

/** Every pod's problem, most fundamental reason first, then by pod name. */
export function podProblems(pods: readonly V1Pod[], now: Date): PodProblem[] {
  const rank = (r: PodProblemReason): number => POD_PROBLEM_REASONS.indexOf(r);
  return pods
    .map((p) => podProblem(p, now))
    .filter((p): p is PodProblem => p !== undefined)
    .sort((a, b) => rank(a.reason) - rank(b.reason) || a.pod.localeCompare(b.pod));
}

/** One member's note: `Init:ImagePullBackOff: failed to pull and unpack image "…": …`. */
export function describePodProblem(p: PodProblem): string {
  return `${p.status}: ${p.detail}`;
}

/** What a pod that is not running yet is doing, as kubectl says it (for a member that does not answer). */
export function podProgress(pod: V1Pod): string | undefined {
  const status = pod.status;
  if (pod.metadata?.deletionTimestamp) return 'Terminating';
  if (!status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'True')) return 'Pending';
  const inits = pod.spec?.initContainers ?? [];
  const done = (status.initContainerStatuses ?? []).filter(
    (s) =>
      s.state?.terminated?.exitCode === 0 ||
      (s.started === true && inits.find((c) => c.name === s.name)?.restartPolicy === 'Always'),
  ).length;
  if (done < inits.length) return `Init:${done}/${inits.length}`;
  const waiting = (status.containerStatuses ?? []).find((s) => s.state?.waiting)?.state?.waiting?.reason;
  return waiting ?? (status.containerStatuses?.length ? undefined : 'ContainerCreating');
}

/**
 * Why a pod's server does not answer, as the pod says it (its problem, or that it has not started):
 * undefined when it runs, and the connection error is then the best answer.
 */
export function podNote(pod: V1Pod | undefined, now: Date): string | undefined {
  if (!pod) return undefined;
  const problem = podProblem(pod, now);
  if (problem) return describePodProblem(problem);
  const progress = podProgress(pod);
  if (progress === 'Terminating') return 'Terminating: the pod is being deleted';
  return progress ? `${progress}: the pod is not running yet` : undefined;
}

/** `pod web-1: ImagePullBackOff (container web): …`, for one pod or several with the same problem. */
function line(pods: readonly string[], p: PodProblem): string {
  const shown = pods.length > 5 ? `${pods.slice(0, 5).join(', ')} and ${pods.length - 5} more` : pods.join(', ');
  return `${pods.length > 1 ? 'pods' : 'pod'} ${shown}: ${p.status}${p.container ? ` (container ${p.container})` : ''}: ${p.detail}`;
}

/** One Degraded problem per reason, in reason order; pods with the same problem share a line. */
export function summarizePodProblems(
  problems: readonly PodProblem[],
): { readonly reason: PodProblemReason; readonly message: string }[] {
  const byReason = new Map<PodProblemReason, Map<string, { readonly first: PodProblem; readonly pods: string[] }>>();
  for (const p of problems) {
    const groups = byReason.get(p.reason) ?? new Map<string, { first: PodProblem; pods: string[] }>();
    const key = `${p.status}\0${p.container ?? ''}\0${p.detail}`;
    const group = groups.get(key) ?? { first: p, pods: [] };
    group.pods.push(p.pod);
    groups.set(key, group);
    byReason.set(p.reason, groups);
  }
  return [...byReason].map(([reason, groups]) => ({
    reason,
    message: [...groups.values()].map((g) => line(g.pods, g.first)).join('; '),
  }));
}

/**
 * One Warning Event per pod, container and reason: the key (its Event's name) is the same however often
 * the problem is seen again, by this controller or the next leader.
 */
export function podProblemEvents(
  problems: readonly PodProblem[],
): { readonly reason: PodProblemReason; readonly message: string; readonly key: string }[] {
  return problems.map((p) => ({
    reason: p.reason,
    message: line([p.pod], p),
    key: `pod-problem/${p.uid}/${p.container ?? ''}/${p.reason}`,
  }));
}

/** When to look again, for problems that end by themselves; undefined when none does. */
export function podRecheckAfterMs(problems: readonly PodProblem[]): number | undefined {
  const times = problems.flatMap((p) => (p.recheckInMs === undefined ? [] : [p.recheckInMs]));
  return times.length > 0 ? Math.min(...times) : undefined;
}

/** The claims a pod mounts (its ephemeral volumes' claims are named `<pod>-<volume>`). */
function claimNames(pod: V1Pod): string[] {
  return (pod.spec?.volumes ?? []).flatMap((v) =>
    v.persistentVolumeClaim
      ? [v.persistentVolumeClaim.claimName]
      : v.ephemeral
        ? [`${pod.metadata?.name ?? ''}-${v.name}`]
        : [],
  );
}

function image(s: V1ContainerStatus, spec: V1Container | undefined): string {
  return spec?.image ?? s.image;
}

/**
 * The pull error without the back-off's preamble, so that a retry (ErrImagePull) and the wait before
 * the next (ImagePullBackOff) read the same.
 */
function pullDetail(message: string | undefined, imageName: string): string {
  const error = message?.replace(/^Back-off pulling image "[^"]*": (ErrImagePull: )?/, '');
  if (!error || /^Back-off pulling image/.test(error)) return `image "${imageName}" cannot be pulled`;
  return cut(error);
}

/** A run that ended within CRASH_WINDOW_MS of its start (or whose times are not known). */
function shortRun(t: V1ContainerStateTerminated): boolean {
  if (!t.startedAt || !t.finishedAt) return true;
  return new Date(t.finishedAt).getTime() - new Date(t.startedAt).getTime() < CRASH_WINDOW_MS;
}

/**
 * How a container ended, with why, when recon8s's own scripts said it in the termination message
 * ("... is not empty but holds no MySQL data dictionary"): that saves a user the `kubectl logs
 * --previous` of a container already restarted. Only their marked line: a container's own output may
 * hold anything, and is never repeated.
 */
function exitDetail(t: V1ContainerStateTerminated): string {
  const said = t.message?.startsWith(MYSQL_GAVE_UP_PREFIX)
    ? t.message.slice(MYSQL_GAVE_UP_PREFIX.length).replace(/\s+/g, ' ').trim()
    : undefined;
  return cut(`exited with code ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${said ? `: ${said}` : ''}`);
}

/** The scheduler's verdict without its preemption postscript: "0/1 nodes are available: 1 Insufficient cpu." */
function firstSentence(message: string): string {
  return message.split(/(?<=\.)\s/)[0] ?? message;
}

function cut(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= MAX_DETAIL ? flat : `${flat.slice(0, MAX_DETAIL - 1)}…`;
}
