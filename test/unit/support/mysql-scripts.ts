// Runs the MySQLCluster scripts for real with bash, in a temporary directory, against fake mysql
// client and server programs that record what they were asked and answer from FAKE_* variables.
import { spawn, spawnSync } from 'node:child_process';
import type { SpawnSyncReturns } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthMySQL } from './mysql-synth.js';

/** The scripts exactly as the scripts ConfigMap ships them. */
export function shippedScripts(): Record<string, string> {
  return { ...synthMySQL().configMap('shop-scripts').data };
}

// The fakes log every call as "<program> <argv...>", then the client credentials they were handed
// ("DEFAULTS" and the option file) and the SQL read from stdin ("STDIN" and the text).
// Each record is one write, so that fakes running at the same time never interleave their lines.
const LOG_CALL = `record=\${0##*/}$(printf ' %q' "$@")
for a in "$@"; do case $a in --defaults-extra-file=*) record+=$'\\n'DEFAULTS$'\\n'$(cat "\${a#*=}") ;; esac; done
printf '%s\\n' "$record" >>"$FAKE_DIR/calls"`;

const FAKES: Record<string, string> = {
  mysql: `${LOG_CALL}
query=
for ((i = 1; i < $#; i++)); do [[ \${!i} == -e ]] && { j=$((i + 1)); query=\${!j}; }; done
if [[ -z $query ]]; then
  sql=$(cat)
  printf 'STDIN\\n%s\\n' "$sql" >>"$FAKE_DIR/calls"
  [[ $sql == *SHUTDOWN* ]] && touch "$FAKE_DIR/shutdown"
  if [[ $sql == *'CLONE INSTANCE'* && -n \${FAKE_CLONE_ERROR:-} ]]; then printf '%s\\n' "$FAKE_CLONE_ERROR" >&2; exit 1; fi
  # The donor busy with another member's clone, for the first FAKE_CLONE_BUSY attempts.
  if [[ $sql == *'CLONE INSTANCE'* ]] && (($(cat "$FAKE_DIR/clone-busy" 2>/dev/null || echo 0) < \${FAKE_CLONE_BUSY:-0})); then
    echo $(($(cat "$FAKE_DIR/clone-busy" 2>/dev/null || echo 0) + 1)) >"$FAKE_DIR/clone-busy"
    echo 'ERROR 3862 (HY000) at line 2: Clone Donor Error: 3634 : Too many concurrent clone operations. Maximum allowed - 1..' >&2
    exit 1
  fi
  if [[ $sql =~ DATA\\ DIRECTORY\\ =\\ \\'([^\\']*)\\' ]]; then
    mkdir -p "\${BASH_REMATCH[1]}" && touch "\${BASH_REMATCH[1]}"/{mysql.ibd,auto.cnf,mysqld-auto.cnf}
  fi
  exit "\${FAKE_SQL_STATUS:-0}"
fi
case $query in
  *'SELECT @@report_host') printf '%s\\n' "\${FAKE_REPORT_HOST-shop-1.shop-headless}" ;;
  *information_schema.schemata*) [[ -n \${FAKE_SCHEMAS-x} ]] && printf '%s\\n' \${FAKE_SCHEMAS-orders shop} ;;
  *'FROM mysql.user'*) [[ -n \${FAKE_ACCOUNTS-x} ]] && printf '%s\\n' \${FAKE_ACCOUNTS-"'reader'@'%'" "'app'@'%'"} ;;
  *'SHOW CREATE USER'*) printf 'CREATE USER \`%s\` IDENTIFIED WITH caching_sha2_password AS 0x2441\\n' reader app ;;
  *'SHOW GRANTS'*) printf 'GRANT SELECT ON \`orders\`.* TO \`%s\`\\n' reader app ;;
  SHUTDOWN) touch "$FAKE_DIR/shutdown" ;;
  *LAST_ERROR_NUMBER*) [[ -n \${FAKE_RECEIVER_ERROR:-} ]] && printf '%s\\n' "$FAKE_RECEIVER_ERROR" ;;
  *'@@GLOBAL.read_only, REPLACE'*) printf '%s\\t%s\\n' "\${FAKE_DONOR_READ_ONLY:-0}" 'aaaaaaaa-0000-0000-0000-000000000000:1-20' ;;
  *PROCESSLIST*) [[ -n \${FAKE_SESSIONS:-} ]] && printf '%s\\n' $FAKE_SESSIONS ;;
  'SELECT @@GLOBAL.rpl_semi_sync_source_enabled') printf '%s\\n' "\${FAKE_SEMI:-0}" ;;
  *'SELECT @@server_uuid') printf '%s\\n' "\${FAKE_SERVER_UUID-aaaaaaaa-0000-0000-0000-000000000000}" ;;
  *super_read_only*) printf '%s\\n' "\${FAKE_SUPER_READ_ONLY:-1}" ;;
  *GTID_SUBSET*) printf '%s\\n' "\${FAKE_GTID_SUBSET:-1}" ;;
  # The binary-log job's questions (binlog.sh): two logs, the first with no Previous_gtids, and nothing
  # to archive unless FAKE_GTID_SUBTRACT names it.
  *'SHOW BINARY LOGS'*) printf 'binlog.000001\\t100\\tNo\\nbinlog.000002\\t100\\tNo\\n' ;;
  *'SHOW BINLOG EVENTS'*) printf 'x\\t4\\tFormat_desc\\t1\\t127\\tServer ver\\nx\\t127\\tPrevious_gtids\\t1\\t158\\t%s\\n' "\${FAKE_PREVIOUS_GTIDS:-}" ;;
  *GTID_SUBTRACT*) printf '%s\\n' "\${FAKE_GTID_SUBTRACT:-}" ;;
  *clone_status*) printf '%s\\n' "\${FAKE_CLONE_STATE:-}" ;;
  *@@GLOBAL.read_only*) printf '%s\\n' "\${FAKE_READ_ONLY:-0}" ;;
  *JOIN*) printf '%s\\n' "\${FAKE_STATES:-}" ;;
  *Uptime*) [[ -e $FAKE_DIR/down ]] && exit 1; printf 'Uptime\\t%s\\n' "\${FAKE_UPTIME:-100}" ;;
  'SELECT 1')
    # A login check on this member: fails for the users FAKE_LOGIN_FAILS names, or as FAKE_LOGIN_STATUS says.
    if [[ " $* " == *' --host=127.0.0.1 '* ]]; then
      user=
      while IFS= read -r l; do [[ $l == user=* ]] && user=\${l#user=}; done <<<"$record"
      [[ -n $user && " \${FAKE_LOGIN_FAILS:-} " == *" $user "* ]] && exit 1
      exit "\${FAKE_LOGIN_STATUS:-0}"
    fi
    # Another member refuses the login (FAKE_PEER_ERROR, the server's message), or, through its
    # Service, the primary: FAKE_PRIMARY_STATUS=1 when none answers.
    [[ -z \${FAKE_PEER_ERROR:-} ]] || { printf '%s\\n' "$FAKE_PEER_ERROR" >&2; exit 1; }
    [[ \${FAKE_PRIMARY_STATUS:-0} == 0 ]] || exit "$FAKE_PRIMARY_STATUS"
    echo 1 ;;
esac
exit 0`,
  mysqld: `${LOG_CALL}
for a in "$@"; do case $a in --datadir=*) dir=\${a#*=} ;; --initialize-insecure) init=1 ;; esac; done
if [[ -n \${init:-} ]]; then mkdir -p "$dir" && touch "$dir"/{mysql.ibd,auto.cnf}; exit 0; fi
until [[ -e $FAKE_DIR/shutdown ]]; do sleep 0.05; done
rm -f "$FAKE_DIR/shutdown"`,
  mysqladmin: `${LOG_CALL}`,
  // Cluster DNS: the headless Service names the addresses in FAKE_DNS (IPv4 and IPv6); none answers
  // without it. As glibc's: ahostsv4 gives only the IPv4 ones, and "not found" (2) when there are none.
  getent: `${LOG_CALL}
found=0
for ip in \${FAKE_DNS:-}; do
  [[ $1 == ahostsv4 && $ip == *:* ]] && continue
  printf '%s STREAM %s\\n' "$ip" "$2"
  found=1
done
((found)) || exit 2`,
  // The real sleep (the next one on PATH). Whole seconds are recorded: a sidecar's "sleep 10" says it
  // finished a round (the fake mysqld's short waits are not).
  sleep: `if [[ $1 != *.* ]]; then
${LOG_CALL}
fi
PATH=\${PATH#*:} exec sleep "$@"`,
  mysql_tzinfo_to_sql: `${LOG_CALL}
echo "INSERT INTO time_zone_name VALUES ('Local time zone must be set--see zic manual page');"`,
  // An object store: store:BUCKET/PREFIX/... is $FAKE_STORE/BUCKET/PREFIX/... (what the scripts ask of
  // rclone: lsf with --files-only, --dirs-only, -R and one --include, cat, rcat, size --json, deletefile,
  // purge, obscure -). Nothing is recorded but the command: the store's contents are the test's.
  // The crypt remote "secure" (scripts/encryption.sh) is the objects under its remote (a store's path, or a
  // local directory: a backup volume's), written as
  // rclone's crypt writes them in kind: its magic, then what only the same password opens (openssl here,
  // keyed with the obscured password rclone is handed in its environment), with crypt's words for what
  // does not open. (rclone's own crypt: checked by hand against the mysql image's rclone 1.75, not yet in a test.)
  rclone: `printf '%s\n' "rclone $*" >>"$FAKE_DIR/calls"
files=1 dirs=1 recursive= include= args=()
while (($#)); do
  case $1 in
    --retries | --low-level-retries | --contimeout | --timeout | --s3-chunk-size | --s3-upload-concurrency | --stats | --log-level) shift 2 ;;
    --files-only) dirs= && shift ;;
    --dirs-only) files= && shift ;;
    -R) recursive=1 && shift ;;
    --include) include=$2 && shift 2 ;;
    --json) shift ;;
    *) args+=("$1") && shift ;;
  esac
done
at() {
  if [[ $1 == secure:* && $RCLONE_CONFIG_SECURE_REMOTE != *:* ]]; then printf '%s/%s' "$RCLONE_CONFIG_SECURE_REMOTE" "\${1#secure:}"
  elif [[ $1 == secure:* ]]; then printf '%s/%s/%s' "$FAKE_STORE" "\${RCLONE_CONFIG_SECURE_REMOTE#*:}" "\${1#secure:}"
  else printf '%s/%s' "$FAKE_STORE" "\${1#*:}"; fi
}
decrypt() {
  local f=$1 out
  (($(stat -c %s -- "$f") >= 32)) || { echo "ERROR : \${f##*/}: Failed to open: file is too short to be encrypted" >&2; exit 1; }
  [[ $(head -c 6 -- "$f") == RCLONE ]] || { echo "ERROR : \${f##*/}: Failed to open: not an encrypted file - bad magic string" >&2; exit 1; }
  out=$FAKE_DIR/decrypted.$$
  tail -c +9 -- "$f" | openssl enc -d -aes-256-cbc -pbkdf2 -pass env:RCLONE_CONFIG_SECURE_PASSWORD -out "$out" 2>/dev/null ||
    { rm -f -- "$out"; echo "ERROR : \${f##*/}: Failed to send to output: failed to authenticate decrypted block - bad password?" >&2; exit 1; }
  cat -- "$out" && rm -f -- "$out"
}
# An rclone filter as a regular expression: "*" within one name; anchored at the listed directory with
# a leading "/", else at the end of the path.
filter_re() {
  local p=$1 re
  re=$(printf '%s' "\${p#/}" | sed -e 's/[.]/[.]/g' -e 's|[*]|[^/]*|g')
  [[ $p == /* ]] && printf '^%s$' "$re" || printf '(^|/)%s$' "$re"
}
case \${args[0]} in
  lsf)
    d=$(at "\${args[1]}")
    [[ -d $d ]] || { echo 'directory not found' >&2; exit 3; }
    re=
    [[ -z $include ]] || re=$(filter_re "$include")
    depth=1 && [[ -z $recursive ]] || depth=64
    (cd "$d" && find . -mindepth 1 -maxdepth "$depth" | sort) | while IFS= read -r e; do
      e=\${e#./}
      if [[ -d $d/$e ]]; then [[ -z $dirs || -n $include ]] || printf '%s/\n' "$e"
      elif [[ -n $files && ( -z $re || $e =~ $re ) ]]; then printf '%s\n' "$e"; fi
    done ;;
  cat)
    f=$(at "\${args[1]}")
    if [[ ! -f $f ]]; then :
    elif [[ \${args[1]} == secure:* ]]; then decrypt "$f"
    else cat -- "$f"; fi ;;
  rcat)
    f=$(at "\${args[1]}") && mkdir -p -- "\${f%/*}"
    if [[ \${args[1]} == secure:* ]]; then
      { printf 'RCLONE\\0\\0'; openssl enc -aes-256-cbc -pbkdf2 -salt -pass env:RCLONE_CONFIG_SECURE_PASSWORD; } >"$f"
    else cat >"$f"; fi ;;
  size) printf '{"count":1,"bytes":%s,"sizeless":0}\n' "\${FAKE_STORE_SIZE:-$(stat -c %s -- "$(at "\${args[1]}")")}" ;;
  deletefile) rm -f -- "$(at "\${args[1]}")" ;;
  purge) rm -rf -- "$(at "\${args[1]}")" ;;
  obscure) printf 'obscured:%s\n' "$(cat)" ;;
  *) echo "the fake rclone does not know \${args[0]}" >&2; exit 1 ;;
esac`,
  mysqldump: `${LOG_CALL}
[[ -n \${FAKE_DUMP_FAIL:-} ]] && { echo '-- half a dump'; exit 2; }
printf -- '-- the dump\\nSET @MYSQLDUMP_TEMP_LOG_BIN = @@SESSION.SQL_LOG_BIN;\\nSET @@SESSION.SQL_LOG_BIN= 0;\\n-- Dump completed\\n'`,
};

/** bootstrap.sh's environment for the first member of a new cluster restoring a backup (spec.restore), but its volume. */
export const RESTORE_MEMBER_ENV: Readonly<Record<string, string>> = {
  POD_NAME: 'shop-0',
  HEADLESS_SERVICE: 'shop-headless',
  PRIMARY_HOST: 'shop-primary',
  MYSQL_REPLICATION_PASSWORD: 'repl-pw',
  MYSQL_ADMIN_PASSWORD: 'admin-pw',
  MYSQL_CLONE_PASSWORD: 'clone-pw',
  MYSQL_BACKUP_PASSWORD: 'backup-pw',
  // No member answers: this one is the first.
  FAKE_PRIMARY_STATUS: '1',
  RESTORE_BACKUP: 'latest',
};

/**
 * How long a test waits for a script by default. Long on purpose: a script under test runs many short
 * processes (the fakes), and on two busy cores (a cold run builds Go beside the unit tests) a few seconds
 * of waiting became a flaky failure. A passing wait returns as soon as its condition holds.
 */
export const SCRIPT_WAIT_MS = 30_000;

export interface ScriptSandbox {
  readonly dir: string;
  readonly scripts: string;
  readonly fakeDir: string;
  /** Runs a shipped script to completion. */
  run(script: string, env: Record<string, string>): SpawnSyncReturns<string>;
  /** Starts a shipped script in the background. */
  start(script: string, env: Record<string, string>): ReturnType<typeof spawn>;
  /** What the fakes recorded. */
  calls(): string;
  path(...parts: string[]): string;
  cleanup(): void;
}

export function scriptSandbox(): ScriptSandbox {
  const dir = mkdtempSync(join(tmpdir(), 'recon8s-mysql-scripts-'));
  const scripts = join(dir, 'scripts');
  const bin = join(dir, 'bin');
  const fakeDir = join(dir, 'fake');
  // Where init-config.sh (run by bootstrap.sh) writes the member's settings, in place of the pod's emptyDir.
  const memberConfig = join(dir, 'member-config');
  for (const d of [scripts, bin, fakeDir, memberConfig]) mkdirSync(d);
  for (const [name, text] of Object.entries(shippedScripts())) writeFileSync(join(scripts, name), text);
  for (const [name, text] of Object.entries(FAKES)) {
    writeFileSync(join(bin, name), `#!/bin/bash\n${text}\n`);
    chmodSync(join(bin, name), 0o755);
  }
  const fullEnv = (env: Record<string, string>): Record<string, string> => ({
    PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    FAKE_DIR: fakeDir,
    MEMBER_CONFIG_DIR: memberConfig,
    ...env,
  });
  return {
    dir,
    scripts,
    fakeDir,
    run: (script, env) =>
      spawnSync('bash', [join(scripts, script)], { env: fullEnv(env), encoding: 'utf8', timeout: SCRIPT_WAIT_MS * 2 }),
    start: (script, env) =>
      spawn('bash', [join(scripts, script)], { env: fullEnv(env), stdio: ['ignore', 'pipe', 'pipe'] }),
    calls: () => (existsSync(join(fakeDir, 'calls')) ? readFileSync(join(fakeDir, 'calls'), 'utf8') : ''),
    path: (...parts) => join(dir, ...parts),
    // Retried: a script's background children (the sidecar's parallel peer probes) may still be writing
    // into the directory for a moment after the script itself exited (ENOTEMPTY otherwise).
    cleanup: () => rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }),
  };
}

/** Polls until check() holds, or fails after timeoutMs. */
export async function eventually(check: () => boolean, what: string, timeoutMs = SCRIPT_WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
