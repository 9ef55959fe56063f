# recon8s: functions sourced by the other scripts (and by whoever runs SQL in a member by hand).
# shellcheck shell=bash
#
# The rules every script here follows (they run in the MySQL image, with its bash):
# - Never enable xtrace: it would print passwords.
# - Passwords reach mysql clients through --defaults-extra-file, from a pipe (never argv, which ps
#   shows, and never a file on disk), and SQL text through stdin.
# - What runs in the mysql container (whatever kubectl exec runs there) takes the pipe from a
#   here-string, never a process substitution: mysqld is PID 1 there and reaps nothing, so a
#   substitution's subshell that outlives its script stays a zombie (until the pod's PID limit is
#   reached).
# - Every script is idempotent, since any of them may be run again after a restart at any point.
# - What they share with the TypeScript (paths, ports, accounts, report reasons) comes from layout.sh,
#   generated from constructs/mysql/script-layout.ts: never written here a second time.
export LC_ALL=C TZ=UTC
# shellcheck source=layout.sh
. "${BASH_SOURCE[0]%/*}/layout.sh"

log() {
  printf '%(%Y-%m-%dT%H:%M:%SZ)T recon8s %s: %s\n' -1 "${0##*/}" "$*" >&2
}

die() {
  log "$*"
  exit 1
}

# Fails unless every variable named is set and not empty.
require_env() {
  local name
  for name in "$@"; do
    [[ -n ${!name:-} ]] || die "the environment variable $name is not set"
  done
}

# This pod's name: the StatefulSet names its pods (and their host names) <cluster>-<ordinal>.
member_name() {
  printf '%s' "${POD_NAME:-${HOSTNAME:-}}"
}

# The StatefulSet ordinal of this pod (its server_id; ordinal 0 initializes a new cluster).
member_ordinal() {
  local pod ordinal
  pod=$(member_name)
  ordinal=${pod##*-}
  [[ $pod == *-* && $ordinal =~ ^[0-9]+$ ]] || die "cannot derive a StatefulSet ordinal from the pod name '$pod'"
  printf '%d' "$((10#$ordinal))"
}

# An option-file value, double-quoted and escaped the way mysys/my_default.cc reads it back.
cnf_quote() {
  # shellcheck disable=SC1003 # bs is one backslash, as meant: no quote is being escaped
  local s=$1 bs='\' dq='"'
  s=${s//"$bs"/"$bs$bs"}
  s=${s//"$dq"/"$bs$dq"}
  s=${s//$'\n'/"${bs}n"}
  s=${s//$'\r'/"${bs}r"}
  s=${s//$'\t'/"${bs}t"}
  printf '"%s"' "$s"
}

# A SQL string literal. Sessions that use it run SET SESSION sql_mode = '' first, so that backslash
# escapes are on whatever the server's sql_mode (NO_BACKSLASH_ESCAPES) says.
sql_quote() {
  # shellcheck disable=SC1003 # bs is one backslash, as meant: no quote is being escaped
  local s=$1 bs='\' sq="'"
  s=${s//"$bs"/"$bs$bs"}
  s=${s//"$sq"/"$bs$sq"}
  printf "'%s'" "$s"
}

# Tells the controller what happened, as "<Reason>: <message>": the kubelet keeps a container's
# termination message in the pod status, and the controller turns it into an Event (and status).
report() {
  printf '%s: %s' "$1" "$2" >"${TERMINATION_LOG:-/dev/termination-log}" || log "could not write the termination message"
}

# The last non-empty line of a message, for a report.
last_line() {
  local line last=
  while IFS= read -r line; do [[ -z ${line// /} ]] || last=$line; done <<<"$1"
  printf '%s' "$last"
}

# last_words COUNT WORD...: the last COUNT words, space-separated, however few there are (bash's
# ${a[*]: -COUNT} gives nothing when there are fewer than COUNT).
last_words() {
  local count=$1
  shift
  (($# <= count)) || shift $(($# - count))
  printf '%s' "$*"
}

# json_field JSON NAME: a string or number field of a flat JSON object written by these scripts.
json_field() {
  local re='"'"$2"'":[[:space:]]*("([^"]*)"|([0-9]+))'
  [[ $1 =~ $re ]] || return 1
  printf '%s' "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
}

# The GTID set of a mysqldump --set-gtid-purged=COMMENTED header (FILE holds its lines, in 8.x's or 9.x's
# form), one line, no spaces.
dump_gtid_set() {
  local text
  text=$(sed -e 's/^-- //' "$1" | tr -d '\n')
  text=${text#*GTID_PURGED=}
  text=${text#*\'+\'\*/}
  text=${text#*\'}
  text=${text%%\'*}
  text=${text//[[:space:]]/}
  text=${text#+}
  [[ $text =~ ^[0-9A-Fa-f:,_a-z-]*$ ]] || die "cannot read the GTID set from the dump header: '$text'"
  printf '%s' "$text"
}

# Client credentials, for --defaults-extra-file=<(client_cnf USER PASSWORD).
client_cnf() {
  printf '%s\n' '[client]' "user=$1" "password=$(cnf_quote "$2")"
}

# The same for a connection over the network: the server must present a certificate the cluster's CA
# signed, or the client gives up before it sends the password (ssl-mode=VERIFY_CA: members are also
# reached by address, which no certificate names; replication, by name, verifies the name too).
verified_cnf() {
  client_cnf "$1" "$2"
  printf '%s\n' 'ssl-mode=VERIFY_CA' "ssl-ca=$RECON8S_TLS_CA"
}

# Runs SQL (from -e or stdin) as root over the local socket and prints bare tab-separated rows. The
# credentials come on fd 3 from a here-string: no process that could outlive the call (see above).
local_sql() {
  mysql --defaults-extra-file=/dev/fd/3 --socket="$RECON8S_SOCKET" --batch --skip-column-names "$@" \
    3<<<"$(client_cnf root "$MYSQL_ROOT_PASSWORD")"
}
