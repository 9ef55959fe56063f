import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { apiServerArgs, probeApiServer } from './apiserver.js';
import { KUBE_VERSION, findBinaries } from './binaries.js';
import type { Binaries } from './binaries.js';
import { controllerManagerArgs, probeControllerManager } from './controller-manager.js';
import { mintClientCredentials, serviceAccountCredentials } from './credentials.js';
import type { Credentials, Identity } from './credentials.js';
import { compactEtcd, etcdArgs, etcdLayout, etcdUrl, probeEtcd } from './etcd.js';
import type { EtcdLayout } from './etcd.js';
import { loadKubeConfig, writeKubeconfig } from './kubeconfig.js';
import { Ownership } from './lifecycle.js';
import { freePort } from './net.js';
import type { TlsClient } from './net.js';
import { createClusterPki } from './cluster-pki.js';
import type { ClusterPki } from './cluster-pki.js';
import type { ControlPlaneLogs, ControlPlaneOptions } from './options.js';
import { ManagedProcess } from './process.js';
import { ComponentExitedError, waitUntil } from './readiness.js';
import type { ProbeResult } from './readiness.js';
import {
  TEMP_DIR_PREFIX,
  currentOwner,
  readState,
  reapStaleControlPlanes,
  runningProcesses,
  writeState,
} from './state.js';

const DEFAULT_START_TIMEOUT_MS = 60_000;
/**
 * SIGTERM-to-SIGKILL grace. kube-apiserver stops serving at once but then waits for idle HTTP/2 client
 * connections (client-node keeps them open) before it exits; a test control plane has nothing to lose
 * by not waiting. The developer cluster gets a clean shutdown.
 */
const TEST_GRACE_MS = 1_500;
const PERSISTENT_GRACE_MS = 10_000;
const PORT_ATTEMPTS = 3;

/**
 * Starts etcd and kube-apiserver (and kube-controller-manager when `controllers` are given) on free
 * loopback ports, with TLS, RBAC and service-account tokens, and waits until they are ready.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binaries = await findBinaries({ assetsDir: options.assetsDir, onBuildOutput: options.onProgress });
  if (!options.persistent) await reapStaleControlPlanes();
  const dir = options.dir === undefined ? await mkdtemp(join(tmpdir(), TEMP_DIR_PREFIX)) : await claimDir(options.dir);
  const controlPlane = new ControlPlane(dir, binaries, options);
  try {
    await controlPlane.boot();
  } catch (error) {
    await controlPlane.stop().catch(() => undefined);
    throw error;
  }
  return controlPlane;
}

export class ControlPlane {
  readonly kubeVersion = KUBE_VERSION;
  readonly kubeconfigPath: string;
  readonly controllers: readonly string[];
  private readonly persistent: boolean;
  private readonly keepDir: boolean;
  private readonly ownership: Ownership | undefined;
  private readonly startTimeoutMs: number;
  private readonly graceMs: number;
  private pki: ClusterPki | undefined;
  private etcdLayout: EtcdLayout | undefined;
  private apiServerPort = 0;
  private etcd: ManagedProcess | undefined;
  private apiServer: ManagedProcess | undefined;
  private controllerManager: ManagedProcess | undefined;
  private stopping: Promise<void> | undefined;
  private bootStartedAt = 0;

  /** @internal Use startControlPlane(). */
  constructor(
    readonly dir: string,
    readonly binaries: Binaries,
    private readonly options: ControlPlaneOptions,
  ) {
    this.kubeconfigPath = join(dir, 'admin.kubeconfig');
    this.controllers = options.controllers ?? [];
    this.persistent = options.persistent ?? false;
    this.keepDir = options.keepDir ?? process.env.RECON8S_KEEP_CONTROLPLANE === '1';
    this.startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    this.graceMs = this.persistent ? PERSISTENT_GRACE_MS : TEST_GRACE_MS;
    this.ownership = this.persistent ? undefined : new Ownership(dir, this.keepDir);
  }

  /** `https://127.0.0.1:<port>` */
  get server(): string {
    return `https://127.0.0.1:${this.apiServerPort}`;
  }

  get logs(): ControlPlaneLogs {
    return {
      etcd: join(this.dir, 'etcd.log'),
      kubeApiserver: join(this.dir, 'kube-apiserver.log'),
      kubeControllerManager: this.controllers.length > 0 ? join(this.dir, 'kube-controller-manager.log') : undefined,
    };
  }

  /** Pids (also process-group ids) of the running components. */
  pids(): number[] {
    return this.components().map((p) => p.pid);
  }

  /** A new KubeConfig for the admin identity (O=system:masters). */
  kubeConfig(): KubeConfig {
    return loadKubeConfig(this.kubeconfigPath);
  }

  /** Credentials for any user and groups, by a client certificate signed by the cluster CA. */
  mintCredentials(identity: Identity): Promise<Credentials> {
    return mintClientCredentials(this.cluster(), this.requirePki().ca, identity);
  }

  /** Credentials of an existing ServiceAccount, from a TokenRequest (default lifetime one hour). */
  serviceAccountKubeConfig(
    namespace: string,
    name: string,
    options: { expirationSeconds?: number } = {},
  ): Promise<Credentials> {
    return serviceAccountCredentials(
      this.cluster(),
      this.kubeConfig(),
      namespace,
      name,
      options.expirationSeconds ?? 3600,
    );
  }

  /**
   * Stops kube-apiserver and starts it again on the same port and etcd: clients see their watches end
   * and connections refused meanwhile, and afterwards an empty watch cache (see compactEtcd()).
   * `graceMs`: how long it may take to shut down before it is killed (a crash: `graceMs: 0`).
   */
  async restartApiServer(options: { graceMs?: number } = {}): Promise<void> {
    const previous = this.apiServer;
    if (!previous || this.stopping) throw new Error('restartApiServer: the control plane is not running.');
    await previous.stop(options.graceMs ?? this.graceMs);
    this.ownership?.remove(previous.pid);
    const deadline = Date.now() + this.startTimeoutMs;
    await this.launchApiServer(this.apiServerPort, deadline);
    // kube-controller-manager exits ("Error building controllers") when kube-apiserver goes away while it
    // still builds its controllers, which a loaded machine stretches past a test's first restart (seen in
    // a whole run, 28 Nov 2026); started again here, as a supervisor would.
    const manager = this.controllerManager;
    if (manager?.exit !== undefined) {
      this.ownership?.remove(manager.pid);
      await this.onFreePort((port) => this.launchControllerManager(port, deadline));
    }
    await this.recordState();
  }

  /**
   * Compacts etcd up to its current revision and returns it. Reads and watches that reach etcd from an
   * older resourceVersion then get 410 Gone. kube-apiserver serves most watches from its watch cache,
   * which still holds recent events; restartApiServer() afterwards empties it, so a watch from a
   * resourceVersion of before the compaction is certain to get 410 Gone.
   */
  compactEtcd(): Promise<number> {
    if (!this.etcdLayout) throw new Error('compactEtcd: etcd is not running.');
    return compactEtcd(this.etcdLayout);
  }

  /** Stops everything (kube-controller-manager, kube-apiserver, etcd) and removes the directory. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  /** @internal */
  async boot(): Promise<void> {
    this.bootStartedAt = performance.now();
    const deadline = Date.now() + this.startTimeoutMs;
    // Certificates and etcd do not depend on each other: make both at once.
    const pkiReady = createClusterPki(join(this.dir, 'pki'), this.persistent ? 365 : 7);
    pkiReady.catch(() => undefined);
    await this.onFreePort(async (port) => {
      this.etcdLayout = etcdLayout(this.dir, port);
      const args = etcdArgs(this.etcdLayout, this.persistent, this.options.etcdArgs);
      const etcdProcess = await this.launch('etcd', this.binaries.etcd, args, this.logs.etcd);
      this.etcd = etcdProcess;
      const layout = this.etcdLayout;
      await waitUntil('etcd to report healthy', () => probeEtcd(layout), { deadline, processes: [etcdProcess] });
    });
    this.progress(`etcd healthy on ${etcdUrl(this.requireEtcdLayout())}`);
    const pki = await pkiReady;
    this.pki = pki;
    await this.onFreePort(async (port) => {
      this.apiServerPort = port;
      await writeKubeconfig(this.kubeconfigPath, {
        server: this.server,
        caPem: pki.ca.certPem,
        userName: 'recon8s-admin',
        user: { clientCertificatePem: pki.admin.certPem, clientKeyPem: pki.admin.keyPem },
      });
      await this.launchApiServer(port, deadline);
    });
    this.progress(`kube-apiserver ready on ${this.server}`);
    if (this.controllers.length > 0) {
      await this.onFreePort((port) => this.launchControllerManager(port, deadline));
      this.progress(`kube-controller-manager healthy (${this.controllers.join(',')})`);
    }
    await this.recordState();
  }

  private progress(message: string): void {
    this.options.onProgress?.(`${message} (${Math.round(performance.now() - this.bootStartedAt)} ms)`);
  }

  private async launchApiServer(port: number, deadline: number): Promise<void> {
    const pki = this.requirePki();
    const args = apiServerArgs(
      {
        port,
        etcdUrl: etcdUrl(this.requireEtcdLayout()),
        caCertPath: pki.ca.certPath,
        serving: pki.apiServer,
        serviceAccountPublicKeyPath: pki.serviceAccount.publicKeyPath,
        serviceAccountPrivateKeyPath: pki.serviceAccount.privateKeyPath,
        certDir: join(this.dir, 'pki'),
      },
      this.options.apiServerArgs,
    );
    const apiServer = await this.launch('kube-apiserver', this.binaries.kubeApiserver, args, this.logs.kubeApiserver);
    this.apiServer = apiServer;
    const processes = [apiServer, ...(this.etcd ? [this.etcd] : [])];
    await waitUntil('kube-apiserver /readyz', () => probeApiServer(this.server, this.adminTls()), {
      deadline,
      processes,
    });
  }

  private async launchControllerManager(port: number, deadline: number): Promise<void> {
    const pki = this.requirePki();
    const kubeconfigPath = join(this.dir, 'kube-controller-manager.kubeconfig');
    await writeKubeconfig(kubeconfigPath, {
      server: this.server,
      caPem: pki.ca.certPem,
      userName: 'system:kube-controller-manager',
      user: {
        clientCertificatePem: pki.controllerManagerClient.certPem,
        clientKeyPem: pki.controllerManagerClient.keyPem,
      },
    });
    const args = controllerManagerArgs(
      {
        port,
        kubeconfigPath,
        controllers: this.controllers,
        caCertPath: pki.ca.certPath,
        serving: pki.controllerManagerServing,
        serviceAccountPrivateKeyPath: pki.serviceAccount.privateKeyPath,
      },
      this.options.controllerManagerArgs,
    );
    const logPath = this.logs.kubeControllerManager ?? join(this.dir, 'kube-controller-manager.log');
    const controllerManager = await this.launch(
      'kube-controller-manager',
      this.binaries.kubeControllerManager,
      args,
      logPath,
    );
    this.controllerManager = controllerManager;
    const probe = (): Promise<ProbeResult> => probeControllerManager(port, { ca: pki.ca.certPem });
    await waitUntil('kube-controller-manager /healthz', probe, { deadline, processes: this.components() });
  }

  private async launch(
    name: string,
    binary: string,
    args: readonly string[],
    logPath: string,
  ): Promise<ManagedProcess> {
    const child = await ManagedProcess.spawn({ name, binary, args, logPath });
    this.ownership?.add(child.pid);
    await this.recordState();
    return child;
  }

  /** Ports are picked before the component binds them; when another process won that race, try again. */
  private async onFreePort(start: (port: number) => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      try {
        await start(port);
        return;
      } catch (error) {
        const lostRace = error instanceof ComponentExitedError && /address already in use/.test(error.process.tail(20));
        if (!lostRace || attempt >= PORT_ATTEMPTS) throw error;
        this.ownership?.remove(error.process.pid);
      }
    }
  }

  private async stopAll(): Promise<void> {
    // Reverse start order: the controllers first, etcd last, so no component logs a missing dependency.
    for (const component of [this.controllerManager, this.apiServer, this.etcd]) {
      if (!component) continue;
      await component.stop(this.graceMs);
      this.ownership?.remove(component.pid);
    }
    await this.ownership?.release();
    if (this.keepDir) await this.recordState();
    else await rm(this.dir, { recursive: true, force: true });
  }

  private components(): ManagedProcess[] {
    return [this.etcd, this.apiServer, this.controllerManager].filter(
      (p): p is ManagedProcess => p !== undefined && p.exit === undefined,
    );
  }

  private async recordState(): Promise<void> {
    await writeState({
      version: 1,
      dir: this.dir,
      kubeVersion: this.kubeVersion,
      server: this.server,
      kubeconfigPath: this.kubeconfigPath,
      binDir: this.binaries.dir,
      owner: this.persistent ? null : currentOwner(),
      keepDir: this.keepDir,
      processes: this.components().map((p) => ({ name: p.name, pid: p.pid, logPath: p.spec.logPath })),
    });
  }

  private cluster(): { server: string; caPem: string; usersDir: string } {
    return { server: this.server, caPem: this.requirePki().ca.certPem, usersDir: join(this.dir, 'users') };
  }

  private adminTls(): TlsClient {
    const pki = this.requirePki();
    return { ca: pki.ca.certPem, cert: pki.admin.certPem, key: pki.admin.keyPem };
  }

  private requirePki(): ClusterPki {
    if (!this.pki) throw new Error('The control plane has not finished starting.');
    return this.pki;
  }

  private requireEtcdLayout(): EtcdLayout {
    if (!this.etcdLayout) throw new Error('etcd has not been started.');
    return this.etcdLayout;
  }
}

/** A given directory is reused only if it is empty or holds a stopped control plane: it gets wiped. */
async function claimDir(dir: string): Promise<string> {
  const previous = readState(dir);
  if (previous && runningProcesses(previous).length > 0) {
    throw new Error(`A control plane is already running in ${dir} (${previous.server}); stop it first.`);
  }
  const entries = await readdir(dir).catch(() => []);
  if (!previous && entries.length > 0) {
    throw new Error(`startControlPlane: ${dir} is neither empty nor a control-plane directory; refusing to wipe it.`);
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}
