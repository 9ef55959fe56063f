export { createInformer } from './informer.js';
export type {
  DeleteInfo,
  Informer,
  InformerHandlers,
  InformerHooks,
  InformerOptions,
  RelistReason,
  UpdateInfo,
  WatchRestartReason,
} from './types.js';
export { OWNER_INDEX, ObjectStore, controllerOwnerUid, deepFreeze, keyOf, objectKey } from './store.js';
export type { IndexFunc, ReplaceDiff, Store } from './store.js';
export { METADATA_LIST_ACCEPT, METADATA_WATCH_ACCEPT, kubeListWatch } from './source.js';
export type {
  BookmarkObject,
  ListOptions,
  ListPage,
  ListWatchSource,
  ResourceTarget,
  WatchEvent,
  WatchOptions,
} from './source.js';
export { Backoff } from '../backoff/index.js';
export type { BackoffOptions } from '../backoff/index.js';
export { mergeInformers } from './merge.js';
