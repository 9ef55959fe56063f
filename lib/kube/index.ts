export { HttpMethod, PatchStrategy, createKubeClient, getObject } from './client.js';
export { bindingSubject, whoAmI } from './identity.js';
export type { KubeClient, KubeClientOptions, KubeObject, RawRequest, RawResponse, StatusTarget } from './client.js';
export type { ConnectionStats, KubeClientHooks, RequestEvent } from './transport.js';
export type { KubeConfigLike, ResolvedKubeConfig } from './kubeconfig.js';
export { loadKubeConfig } from './kubeconfig.js';
export { KubeApiError, apiError, isAlreadyExists, isConflict, isGone, isNotFound, statusException } from './errors.js';
export type { ApiErrorCause, ApiErrorInfo, StatusLike } from './errors.js';
