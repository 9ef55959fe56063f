/*
 * OCI image archives without image tooling: a layer is a tar of a directory, everything else is JSON
 * addressed by its sha256 (OCI image-spec v1.1: image layout, index, manifest, config). The archive is
 * what `ctr -n k8s.io images import` (and `docker load`, `podman load`) read; each index entry carries
 * the reference it is imported as (io.containerd.image.name), so the import tags it without flags.
 * The JSON is built by pure functions; writing and reading archives is thin I/O around GNU tar.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hashFile } from './cache.js';
import { runCommand } from './run.js';

export const MEDIA_TYPES = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar',
} as const;

/** The annotation containerd names an imported image by. */
export const CONTAINERD_NAME_ANNOTATION = 'io.containerd.image.name';
/** The OCI image layout's reference annotation (the tag). */
export const OCI_REF_ANNOTATION = 'org.opencontainers.image.ref.name';

/** What a container runtime takes from the image when the pod does not say otherwise. */
export interface ImageConfig {
  /** uid:gid, numeric: the kubelet can only verify runAsNonRoot against a numeric user. */
  readonly user: string;
  readonly entrypoint?: readonly string[];
  readonly cmd?: readonly string[];
  readonly env: readonly string[];
  readonly workingDir: string;
  /** e.g. "8080/tcp" */
  readonly exposedPorts?: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
}

export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly platform?: { readonly architecture: string; readonly os: string };
  readonly annotations?: Readonly<Record<string, string>>;
}

/** One image of an archive: its configuration and every reference it is imported as. */
export interface ArchiveImage {
  readonly refs: readonly string[];
  readonly config: ImageConfig;
}

/** The default PATH of the images (Debian's, as the official images have it). */
export const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const PLATFORM = { architecture: 'amd64', os: 'linux' } as const;

/** A JSON document as the bytes that get hashed (the digest names exactly these bytes). */
export function jsonBlob(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

export function sha256Digest(bytes: Buffer): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** The image configuration document; `diffIds` are the digests of the uncompressed layers, in order. */
export function configDocument(config: ImageConfig, diffIds: readonly string[]): unknown {
  const ports = config.exposedPorts?.length ? Object.fromEntries(config.exposedPorts.map((p) => [p, {}])) : undefined;
  return {
    ...PLATFORM,
    config: {
      User: config.user,
      Env: [...config.env],
      ...(config.entrypoint ? { Entrypoint: [...config.entrypoint] } : {}),
      ...(config.cmd ? { Cmd: [...config.cmd] } : {}),
      WorkingDir: config.workingDir,
      ...(ports ? { ExposedPorts: ports } : {}),
      ...(config.labels && Object.keys(config.labels).length > 0 ? { Labels: { ...config.labels } } : {}),
    },
    rootfs: { type: 'layers', diff_ids: [...diffIds] },
  };
}

export function manifestDocument(config: Descriptor, layers: readonly Descriptor[]): unknown {
  return { schemaVersion: 2, mediaType: MEDIA_TYPES.manifest, config, layers };
}

/** "registry/repo:tag" -> "tag" (a reference without a tag is refused: the import would be unnamed). */
export function tagOf(ref: string): string {
  const colon = ref.lastIndexOf(':');
  const tag = ref.slice(colon + 1);
  if (
    colon <= ref.lastIndexOf('/') ||
    !/^[a-z0-9][a-z0-9._/:-]*$/.test(ref.slice(0, colon)) ||
    !/^\w[\w.-]{0,127}$/.test(tag)
  ) {
    throw new Error(`image reference "${ref}": expected a lower-case name and a tag, e.g. recon8s.test/web:1`);
  }
  return tag;
}

/** index.json: one entry per reference, each naming its manifest. */
export function indexDocument(entries: readonly { readonly manifest: Descriptor; readonly ref: string }[]): unknown {
  return {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.index,
    manifests: entries.map(({ manifest, ref }) => ({
      ...manifest,
      platform: PLATFORM,
      annotations: { [CONTAINERD_NAME_ANNOTATION]: ref, [OCI_REF_ANNOTATION]: tagOf(ref) },
    })),
  };
}

export interface LayerOptions {
  /**
   * Keep the files' numeric owners (the mysql image's 999-owned directories). Otherwise every entry
   * is root's, whoever built the tree.
   */
  readonly keepOwners: boolean;
}

/**
 * Writes `rootfs` as an uncompressed layer tar (containerd unpacks it as it is; compressing would
 * cost a cold build time for nothing on one machine). Sorted, with fixed times: the same tree gives
 * the same digest.
 */
export async function writeLayer(rootfs: string, out: string, opts: LayerOptions): Promise<void> {
  const owners = opts.keepOwners ? ['--numeric-owner'] : ['--owner=0', '--group=0', '--numeric-owner'];
  await runCommand('tar', [
    '--create',
    '--file',
    out,
    '--directory',
    rootfs,
    '--sort=name',
    '--mtime=@0',
    ...owners,
    '.',
  ]);
}

/**
 * Writes an OCI archive of one layer and one or more images built on it (e.g. two tags of the web
 * server that differ only in their environment). The layer file is moved into the archive's layout.
 */
export async function writeArchive(opts: {
  readonly layer: string;
  readonly images: readonly ArchiveImage[];
  readonly out: string;
}): Promise<void> {
  const layout = await mkdtemp(`${opts.out}.layout-`);
  try {
    const blobs = join(layout, 'blobs', 'sha256');
    await mkdir(blobs, { recursive: true });
    const layerHash = await hashFile(opts.layer);
    await rename(opts.layer, join(blobs, layerHash.sha256));
    const layer: Descriptor = {
      mediaType: MEDIA_TYPES.layer,
      digest: `sha256:${layerHash.sha256}`,
      size: layerHash.size,
    };
    const putBlob = async (bytes: Buffer, mediaType: string): Promise<Descriptor> => {
      const digest = sha256Digest(bytes);
      await writeFile(join(blobs, digest.slice('sha256:'.length)), bytes);
      return { mediaType, digest, size: bytes.length };
    };
    const entries: { manifest: Descriptor; ref: string }[] = [];
    for (const image of opts.images) {
      const config = await putBlob(jsonBlob(configDocument(image.config, [layer.digest])), MEDIA_TYPES.config);
      const manifest = await putBlob(jsonBlob(manifestDocument(config, [layer])), MEDIA_TYPES.manifest);
      for (const ref of image.refs) entries.push({ manifest, ref });
    }
    await writeFile(join(layout, 'index.json'), jsonBlob(indexDocument(entries)));
    await writeFile(join(layout, 'oci-layout'), jsonBlob({ imageLayoutVersion: '1.0.0' }));
    await runCommand('tar', [
      '--create',
      '--file',
      opts.out,
      '--directory',
      layout,
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      'oci-layout',
      'index.json',
      'blobs',
    ]);
  } finally {
    await rm(layout, { recursive: true, force: true });
  }
}

/** An archive as a container runtime would read it, every digest checked. */
export interface InspectedArchive {
  readonly members: readonly string[];
  readonly index: { readonly manifests: readonly Descriptor[] };
  /** By reference (io.containerd.image.name). */
  readonly images: ReadonlyMap<
    string,
    { readonly manifest: Descriptor & { readonly document: ManifestJson }; readonly config: ConfigJson }
  >;
}

export interface ManifestJson {
  readonly schemaVersion: number;
  readonly mediaType: string;
  readonly config: Descriptor;
  readonly layers: readonly Descriptor[];
}
export interface ConfigJson {
  readonly architecture: string;
  readonly os: string;
  readonly config: {
    readonly User?: string;
    readonly Env?: string[];
    readonly Entrypoint?: string[];
    readonly Cmd?: string[];
    readonly WorkingDir?: string;
    readonly ExposedPorts?: Record<string, unknown>;
    readonly Labels?: Record<string, string>;
  };
  readonly rootfs: { readonly type: string; readonly diff_ids: readonly string[] };
}

/**
 * Reads an archive back and checks what `ctr images import` relies on: the layout marker, an index
 * whose entries are named, and every blob (manifests, configs, layers) present with the digest and
 * size its descriptor claims. Throws on the first inconsistency.
 */
export async function inspectArchive(archive: string): Promise<InspectedArchive> {
  // Archives written by other tools name their members "./index.json" and so on: both forms are valid.
  const listed = (await runCommand('tar', ['--list', '--file', archive])).split('\n').filter((l) => l !== '');
  const named = new Map(listed.map((l) => [l.replace(/^\.\//, ''), l]));
  const members = [...named.keys()];
  const member = async (name: string): Promise<Buffer> => {
    const stored = named.get(name);
    if (stored === undefined) throw new Error(`${archive}: no ${name}`);
    return (await hashMember(archive, stored, true)).bytes ?? Buffer.alloc(0);
  };
  const layout = JSON.parse((await member('oci-layout')).toString()) as { imageLayoutVersion?: string };
  if (layout.imageLayoutVersion !== '1.0.0') throw new Error(`${archive}: oci-layout says ${JSON.stringify(layout)}`);
  const index = JSON.parse((await member('index.json')).toString()) as { manifests: Descriptor[] };
  const checked = new Map<string, Buffer | undefined>();
  const blob = async (d: Descriptor, keep: boolean): Promise<Buffer | undefined> => {
    if (checked.has(d.digest) && (!keep || checked.get(d.digest))) return checked.get(d.digest);
    const name = `blobs/sha256/${d.digest.replace(/^sha256:/, '')}`;
    const stored = named.get(name);
    if (stored === undefined) throw new Error(`${archive}: ${d.mediaType} ${d.digest} is not in the archive`);
    const { sha256, size, bytes } = await hashMember(archive, stored, keep);
    if (`sha256:${sha256}` !== d.digest || size !== d.size) {
      throw new Error(
        `${archive}: ${name} has sha256:${sha256} (${size} bytes), its descriptor says ${d.digest} (${d.size} bytes)`,
      );
    }
    checked.set(d.digest, bytes);
    return bytes;
  };
  const images = new Map<string, { manifest: Descriptor & { document: ManifestJson }; config: ConfigJson }>();
  for (const entry of index.manifests) {
    const ref = entry.annotations?.[CONTAINERD_NAME_ANNOTATION];
    if (!ref)
      throw new Error(`${archive}: index entry ${entry.digest} has no ${CONTAINERD_NAME_ANNOTATION} annotation`);
    const document = JSON.parse(((await blob(entry, true)) ?? Buffer.alloc(0)).toString()) as ManifestJson;
    const config = JSON.parse(((await blob(document.config, true)) ?? Buffer.alloc(0)).toString()) as ConfigJson;
    for (const layer of document.layers) await blob(layer, false);
    images.set(ref, { manifest: { ...entry, document }, config });
  }
  return { members, index, images };
}

/** sha256 and size of one archive member, streamed through tar; the bytes too when asked (small blobs). */
async function hashMember(
  archive: string,
  name: string,
  keep: boolean,
): Promise<{ sha256: string; size: number; bytes: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    const tar = spawn('tar', ['--extract', '--to-stdout', '--file', archive, name], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const h = createHash('sha256');
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    tar.stdout.on('data', (c: Buffer) => {
      h.update(c);
      size += c.length;
      if (keep) chunks.push(c);
    });
    tar.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    tar.on('error', reject);
    tar.on('close', (code) => {
      if (code !== 0) reject(new Error(`tar could not read ${name} from ${archive}: ${stderr}`));
      else resolve({ sha256: h.digest('hex'), size, bytes: keep ? Buffer.concat(chunks) : undefined });
    });
  });
}
