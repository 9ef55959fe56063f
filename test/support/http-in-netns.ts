// An HTTP GET from inside a network namespace (a pod's, a sandbox's), as the kubelet's probe sends it:
// this process cannot reach that network, so the request is sent from a process run in it with nsenter.
// That process is bash, with its /dev/tcp: the tests probe every 250 ms while a member starts, and a
// Node process per probe (as this was) cost ~0.2 s of CPU each, minutes of it per run of the sandbox
// file on two cores, where bash costs a few milliseconds.
import { spawnSync } from 'node:child_process';

export interface HttpResult {
  /** 0 on a 2xx answer, 1 on another status, 2 when nothing answered; null when it was killed. */
  readonly status: number | null;
  /** The body. */
  readonly stdout: string;
  readonly stderr: string;
}

/** One HTTP/1.0 GET (the server closes the connection after the answer), the whole answer on stdout. */
const GET_SCRIPT = `exec 3<>"/dev/tcp/$1/$2" || exit 2
printf 'GET %s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n' "$3" "$1" >&3
cat <&3`;

export function httpGetInNetns(netns: string, url: string, timeoutSeconds = 10): HttpResult {
  const { hostname, port, pathname, search } = new URL(url);
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  const r = spawnSync(
    'nsenter',
    [
      `--net=${netns}`,
      '--',
      'timeout',
      String(timeoutSeconds),
      'bash',
      '-c',
      GET_SCRIPT,
      'http-get',
      host,
      port || '80',
      `${pathname}${search}`,
    ],
    { encoding: 'utf8', timeout: (timeoutSeconds + 20) * 1000 },
  );
  if (r.status === null) return { status: null, stdout: '', stderr: `killed: ${r.error?.message ?? String(r.signal)}` };
  const answer = /^HTTP\/1\.[01] (\d{3})[^\n]*\n([^]*?)\r?\n\r?\n([^]*)$/.exec(r.stdout);
  if (!answer)
    return { status: 2, stdout: '', stderr: `${r.stderr}${r.stdout}`.trim() || `nothing answered at ${url}` };
  const code = Number(answer[1]);
  return { status: code >= 200 && code < 300 ? 0 : 1, stdout: answer[3] ?? '', stderr: r.stderr };
}
