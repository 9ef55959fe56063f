import { spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface RunResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the recon8s CLI from source in a child process, as a user would run the bin. */
export function runCli(args: readonly string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): RunResult {
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${REPO_ROOT}lib/cli/main.ts`, ...args], {
    cwd: REPO_ROOT,
    input: opts.input,
    encoding: 'utf8',
    env: { ...process.env, ...opts.env },
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs `cdk8s synth` of this repository's cdk8s.yaml into `outdir`. */
export function runSynth(outdir: string, env: NodeJS.ProcessEnv = {}): RunResult {
  const r = spawnSync(`${REPO_ROOT}node_modules/.bin/cdk8s`, ['synth', '--output', outdir], {
    // No upgrade check: it asks the npm registry on every run.
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false', ...env },
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs the CLI's main() in this process (no start-up cost): its exit code and what it wrote. */
export async function runCliHere(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        into.push(String(chunk));
        done();
      },
    });
  // Loaded on first use: most users of this module only spawn the CLI, and need none of it here.
  const { main } = await import('../../lib/cli/cli.js');
  const code = await main(args, sink(out), sink(err));
  return { code, out: out.join(''), err: err.join('') };
}
