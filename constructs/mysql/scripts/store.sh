# recon8s: functions for the scripts that use the object store (backup.sh, binlog.sh, find-binlog.sh,
# list-backups.sh, verify-backup.sh and the restore). Never enable xtrace.
# shellcheck shell=bash
#
# The store's layout under the prefix, which restore and the CLI read:
# - `base/<name>/dump.sql.gz`, then `base/<name>/manifest.json` (name, gtidSet, startTime, endTime,
#   sizeBytes, source, dataBytes, tableCount, and tables: `[schema.table, rows, CHECKSUM TABLE]` for each
#   table in the dump's snapshot, or checksumsSkipped saying why there are none): a backup exists only
#   once its manifest does, since the manifest is written last.
# - `binlog/<archived at>-<server_uuid>-<file>.gz` with `.json` beside it (file, server, member,
#   previousGtids, gtidSet): closed binary logs of whichever member was primary. Names sort in the order
#   they were archived; after a failover the new primary's logs repeat transactions already archived,
#   and replay skips those by GTID.
# - `binlog/state.json` (archivedGtids, coveredUntil): every transaction committed before coveredUntil is
#   in the archive.
#
# rclone is the client (streaming multipart uploads; S3, and whatever else a user may point it at),
# configured by environment only (RCLONE_CONFIG_STORE_*, the keys from the Secret), so that no
# credential is ever on a command line or in a file. It is copied into the pod by an init container
# when the MySQL image has none.
require_env STORE_BUCKET STORE_PREFIX RCLONE_CONFIG_STORE_ACCESS_KEY_ID RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY
PATH=$RECON8S_TOOLS_DIR:$PATH
export RCLONE_CONFIG_STORE_TYPE=s3 RCLONE_CONFIG_STORE_PROVIDER=Other RCLONE_CONFIG_STORE_ENV_AUTH=false
# The bucket is the user's: never try to create it (a missing bucket is an error to report).
export RCLONE_CONFIG_STORE_NO_CHECK_BUCKET=true
# No config file (the environment is the configuration), caches in the writable scratch volume.
export RCLONE_CONFIG='' RCLONE_CACHE_DIR=$RECON8S_TMP/rclone XDG_CACHE_HOME=$RECON8S_TMP

# Client-side encryption (s3.encryption): STORE_ENCRYPTION_KEY_FILE is the key, a file of the Secret's
# volume. Every object is then written and read through rclone's crypt remote "secure" over the prefix
# (encryption.sh; names as they are, so the layout above and every listing stay the same).
# shellcheck source=encryption.sh
. "${BASH_SOURCE[0]%/*}/encryption.sh"
store_secret=
if [[ -n ${STORE_ENCRYPTION_KEY_FILE:-} ]]; then
  crypt_remote "store:$STORE_BUCKET/$STORE_PREFIX" "$STORE_ENCRYPTION_KEY_FILE" \
    "the object store's encryption key ($STORE_ENCRYPTION_KEY_FILE, from the Secret that s3.encryption.secretRef names)" \
    s3.rcloneImage
  store_secret=$crypt_secret
fi

# store_url [PATH]: what a user would call the location (no credentials in it).
store_url() {
  printf 's3://%s/%s%s' "$STORE_BUCKET" "$STORE_PREFIX" "${1:+/$1}"
}

# store_path [PATH]: the rclone remote path under the prefix (through the crypt remote when encrypted).
store_path() {
  if [[ -n $store_secret ]]; then
    printf 'secure:%s' "${1:-}"
  else
    printf 'store:%s/%s%s' "$STORE_BUCKET" "$STORE_PREFIX" "${1:+/$1}"
  fi
}

# rclone, failing fast: a broken store is reported by the job and retried at the next run, never hot.
store_rclone() {
  command -v rclone >/dev/null || die "rclone is not on PATH (s3.rcloneImage copies it into the pod)"
  RCLONE_CONFIG_SECURE_PASSWORD=$store_secret rclone --retries 1 --low-level-retries 3 --contimeout 10s --timeout 5m \
    --s3-chunk-size 16M --s3-upload-concurrency 2 --stats 0 --log-level ERROR "$@"
}

# store_cat PATH: the object's contents on stdout (streamed). When it cannot be read, it says which object
# and why on stderr and for store_failure (a pipeline's caller reports it), and fails.
store_failure_file=$RECON8S_TMP/store-failure.$$
store_cat() {
  local why rc=0
  rm -f -- "$store_failure_file"
  store_rclone cat "$(store_path "$1")" 2>"$store_failure_file.err" || rc=$?
  ((rc != 0)) || { rm -f -- "$store_failure_file.err"; return 0; }
  why=$(last_line "$(cat -- "$store_failure_file.err" 2>/dev/null)")
  # rclone's "<time> ERROR : <name>: Failed to open: <reason>": the reason.
  [[ ! $why =~ Failed\ to\ [a-z\ ]+:\ (.*)$ ]] || why=${BASH_REMATCH[1]}
  rm -f -- "$store_failure_file.err"
  [[ -z $store_secret ]] || why=$(crypt_failure "$why")
  printf 'cannot read %s: %s' "$(store_url "$1")" "${why:-rclone failed ($rc)}" >"$store_failure_file"
  log "$(<"$store_failure_file")"
  return 1
}

# store_failure: why the last store_cat failed (nothing when it did not).
store_failure() {
  [[ -s $store_failure_file ]] && cat -- "$store_failure_file"
}

# store_list DIR [rclone lsf options]: the names under DIR, one per line; nothing when DIR is empty.
store_list() {
  local dir=$1 out rc=0
  shift
  out=$(store_rclone lsf "$@" "$(store_path "$dir")" 2>&1) || rc=$?
  # rclone says "directory not found" (exit 3) for a prefix that holds nothing yet.
  if ((rc == 3)); then return 0; fi
  ((rc == 0)) || die "cannot list $(store_url "$dir"): $(last_line "$out")"
  [[ -z $out ]] || printf '%s\n' "$out"
}

