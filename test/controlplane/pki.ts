import { execFile } from 'node:child_process';
import { generateKeyPair } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const generateKeyPairAsync = promisify(generateKeyPair);
const OPENSSL_CONFIG = 'openssl.cnf';

/** A certificate with its private key, both as PEM files and as PEM text. */
export interface KeyPair {
  readonly certPath: string;
  readonly keyPath: string;
  readonly certPem: string;
  readonly keyPem: string;
}

export interface CertificateRequest {
  /** File name stem inside the PKI directory, e.g. `admin` → admin.crt / admin.key. */
  readonly name: string;
  readonly commonName: string;
  /** Kubernetes reads these as the identity's groups. */
  readonly organizations?: readonly string[];
  readonly usage: 'server' | 'client';
  readonly ipAddresses?: readonly string[];
  readonly dnsNames?: readonly string[];
}

/**
 * A throw-away certificate authority in one directory. Keys are ECDSA P-256 from Node's crypto (fast,
 * no entropy wait); the certificates come from the openssl CLI because Node cannot issue certificates.
 */
export class CertificateAuthority {
  private constructor(
    readonly dir: string,
    private readonly root: KeyPair,
    private readonly validityDays: number,
  ) {}

  get certPath(): string {
    return this.root.certPath;
  }

  get certPem(): string {
    return this.root.certPem;
  }

  static async create(dir: string, options: { validityDays?: number } = {}): Promise<CertificateAuthority> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // An empty config keeps openssl's distribution defaults (e.g. v3_ca on every -x509) out of our certs.
    await writeFile(join(dir, OPENSSL_CONFIG), '[req]\ndistinguished_name = dn\n[dn]\n');
    const days = options.validityDays ?? 7;
    const { keyPath, keyPem } = await writeKey(dir, 'ca');
    const certPath = join(dir, 'ca.crt');
    await openssl([
      'req',
      '-config',
      join(dir, OPENSSL_CONFIG),
      '-new',
      '-x509',
      '-key',
      keyPath,
      '-out',
      certPath,
      '-days',
      String(days),
      '-subj',
      '/CN=recon8s-test-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    const certPem = await readFile(certPath, 'utf8');
    return new CertificateAuthority(dir, { certPath, keyPath, certPem, keyPem }, days);
  }

  async issue(request: CertificateRequest): Promise<KeyPair> {
    const { keyPath, keyPem } = await writeKey(this.dir, request.name);
    const certPath = join(this.dir, `${request.name}.crt`);
    const subject = [
      `/CN=${escapeRdn(request.commonName)}`,
      ...(request.organizations ?? []).map((o) => `/O=${escapeRdn(o)}`),
    ];
    const altNames = [
      ...(request.ipAddresses ?? []).map((ip) => `IP:${ip}`),
      ...(request.dnsNames ?? []).map((dns) => `DNS:${dns}`),
    ];
    await openssl([
      'req',
      '-config',
      join(this.dir, OPENSSL_CONFIG),
      '-new',
      '-x509',
      '-utf8',
      '-key',
      keyPath,
      '-out',
      certPath,
      '-days',
      String(this.validityDays),
      '-CA',
      this.root.certPath,
      '-CAkey',
      this.root.keyPath,
      '-subj',
      subject.join(''),
      '-addext',
      'basicConstraints=critical,CA:FALSE',
      '-addext',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      '-addext',
      `extendedKeyUsage=${request.usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
      ...(altNames.length > 0 ? ['-addext', `subjectAltName=${altNames.join(',')}`] : []),
    ]);
    return { certPath, keyPath, certPem: await readFile(certPath, 'utf8'), keyPem };
  }
}

/** The key pair kube-apiserver signs service-account tokens with (and kube-controller-manager too). */
export async function createServiceAccountKeys(
  dir: string,
): Promise<{ privateKeyPath: string; publicKeyPath: string }> {
  const { privateKey, publicKey } = await newKeyPair();
  const privateKeyPath = join(dir, 'service-account.key');
  const publicKeyPath = join(dir, 'service-account.pub');
  await writeFile(privateKeyPath, privateKey, { mode: 0o600 });
  await writeFile(publicKeyPath, publicKey);
  return { privateKeyPath, publicKeyPath };
}

function newKeyPair(): Promise<{ privateKey: string; publicKey: string }> {
  return generateKeyPairAsync('ec', {
    namedCurve: 'prime256v1',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
}

async function writeKey(dir: string, name: string): Promise<{ keyPath: string; keyPem: string }> {
  const { privateKey } = await newKeyPair();
  const keyPath = join(dir, `${name}.key`);
  await writeFile(keyPath, privateKey, { mode: 0o600 });
  return { keyPath, keyPem: privateKey };
}

// openssl's -subj syntax gives '/', '+', '=' and '\' a meaning; a user name may contain any of them.
function escapeRdn(value: string): string {
  return value.replace(/[\\/+=]/g, (c) => `\\${c}`);
}

async function openssl(args: readonly string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args);
  } catch (error) {
    const err = error as NodeJS.ErrnoException & { stderr?: string };
    if (err.code === 'ENOENT') {
      throw new Error(
        'The test control plane needs the openssl CLI (OpenSSL >= 3.0) on PATH to issue certificates; none was found.',
        { cause: error },
      );
    }
    // `req -x509 -CA` needs OpenSSL 3.0; older versions fail here with "unknown option -CA".
    throw new Error(`openssl ${args.join(' ')} failed: ${err.stderr?.trim() ?? err.message}`, { cause: error });
  }
}
