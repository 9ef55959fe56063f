/**
 * A real Kubernetes control plane for tests and developers: etcd, kube-apiserver and optionally
 * kube-controller-manager on loopback, the way controller-runtime's envtest runs them.
 */
export { startControlPlane, ControlPlane } from './controlplane.js';
export type { ControlPlaneLogs, ControlPlaneOptions } from './options.js';
export type { Credentials, Identity } from './credentials.js';
export { DEFAULT_CONTROLLERS, WORKLOAD_CONTROLLERS } from './controller-manager.js';
export { KUBE_VERSION, findBinaries } from './binaries.js';
export type { Binaries } from './binaries.js';
export { readState, reapStaleControlPlanes, runningProcesses, stopControlPlaneAt } from './state.js';
export type { ControlPlaneState } from './state.js';
