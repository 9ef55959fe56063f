export { createKubeClient, PooledKubeConfig } from './client.js';
export type {
  ConnectionStats,
  KubeClient,
  KubeClientHooks,
  KubeClientOptions,
  RawRequest,
  RequestEvent,
  StatusTarget,
} from './client.js';
export { apiError, isAlreadyExists, isConflict, isGone, isNotFound, statusException } from './errors.js';
export type { ApiErrorCause, ApiErrorInfo, StatusLike } from './errors.js';
