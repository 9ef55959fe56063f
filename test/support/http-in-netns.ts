// An HTTP GET from inside a network namespace (a pod's, a sandbox's), as the kubelet's probe sends it:
// this process cannot reach that network, so a short Node script is run in it with nsenter.
import { spawnSync } from 'node:child_process';

export interface HttpResult {
  /** 0 on a 2xx answer, 1 on another status, 2 when nothing answered; null when it was killed. */
  readonly status: number | null;
  /** The body. */
  readonly stdout: string;
  readonly stderr: string;
}

export function httpGetInNetns(netns: string, url: string): HttpResult {
  const r = spawnSync(
    'nsenter',
    [
      `--net=${netns}`,
      '--',
      process.execPath,
      '-e',
      `fetch(${JSON.stringify(url)}, { signal: AbortSignal.timeout(10000) }).then(async (r) => { process.stdout.write(await r.text()); process.exitCode = r.ok ? 0 : 1; }, (e) => { process.stderr.write(String(e)); process.exitCode = 2; })`,
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
