export interface ControlPlaneOptions {
  /** Start kube-controller-manager with these controllers (see DEFAULT_CONTROLLERS); none: no kcm. */
  readonly controllers?: readonly string[];
  /** Directory for certificates, data, kubeconfigs and logs; default: a new os.tmpdir()/recon8s-controlplane-*. */
  readonly dir?: string;
  /** Outlive this Node process (the developer cluster); otherwise it is stopped when this process ends. */
  readonly persistent?: boolean;
  /** Keep `dir` (logs, kubeconfigs) after stop; default: env RECON8S_KEEP_CONTROLPLANE=1. */
  readonly keepDir?: boolean;
  /** Directory with the four binaries; default: env RECON8S_ASSETS, else build-binaries.sh's cache. */
  readonly assetsDir?: string;
  /** Bound on each start (and restart) once the binaries are there. Default 60 s. */
  readonly startTimeoutMs?: number;
  /** Extra `--name=value` flags; one with the name of a default replaces it. */
  readonly etcdArgs?: readonly string[];
  readonly apiServerArgs?: readonly string[];
  readonly controllerManagerArgs?: readonly string[];
  /** Progress messages: the (slow, first-time) binary build, then each component as it gets ready. */
  readonly onProgress?: (message: string) => void;
}

export interface ControlPlaneLogs {
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly kubeControllerManager: string | undefined;
}
