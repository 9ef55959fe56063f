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
  # Also in the termination message (unless a report is there already): the controller shows it in
  # the member's condition, where a user sees why this container gave up without reading its logs.
  local to=${TERMINATION_LOG:-/dev/termination-log}
  if [[ -n ${TERMINATION_LOG-} || -e $to ]] && [[ ! -s $to ]]; then
    printf '%s%s' "$RECON8S_GAVE_UP_PREFIX" "$*" >"$to" 2>/dev/null || true
  fi
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

# json_field JSON NAME: a string or number field of a flat JSON object written by these scripts. What it
# returns is text only: a value that comes from outside (the object store above all) goes through
# stored_field, which checks it against its grammar, before it reaches SQL, a path or arithmetic.
json_field() {
  local re='"'"$2"'":[[:space:]]*("([^"]*)"|([0-9]+))'
  [[ $1 =~ $re ]] || return 1
  printf '%s' "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
}

# valid GRAMMAR VALUE: whether VALUE is of GRAMMAR (a GTID set without its blanks). The grammars (gtid-set,
# gtid, uuid, backup-name, time, count, binlog-file, segment, host) are constructs/mysql/grammar.ts's, in
# layout.sh as RECON8S_GRAMMAR_<name>: the spec's patterns and the controller's parsers are the same
# ones. Nothing any of them accepts can close a SQL string literal, start a shell expansion or an
# arithmetic expression, or name another path.
valid() {
  local name=RECON8S_GRAMMAR_${1//-/_} value=$2
  [[ -n ${!name+x} ]] || die "unknown grammar '$1'"
  [[ $1 != gtid-set ]] || value=${value//[[:space:]]/}
  [[ $value =~ ${!name} ]]
}

# shown VALUE: a value for a message: quoted, printable characters only, at most 120 of them.
shown() {
  local v=${1//[^[:print:]]/?}
  ((${#v} <= 120)) || v="${v:0:120}..."
  printf "'%s'" "$v"
}

# What refuses a value from outside: die, unless the script names its own (restore.sh: restore_fail, so
# that the refusal is reported as RestoreFailed).
on_untrusted=die

# checked VAR GRAMMAR VALUE WHAT: VAR := VALUE (a GTID set without its blanks) when it is of GRAMMAR;
# otherwise refuses it, naming WHAT (where it came from), the value and what was expected.
# (The locals' names start with "__": a caller's VAR must not be one of them.)
checked() {
  local -n __checked_var=$1
  local __checked_words=RECON8S_GRAMMAR_WORDS_${2//-/_}
  valid "$2" "$3" || "$on_untrusted" "$4 is not ${!__checked_words}: $(shown "$3")"
  __checked_var=$3
  [[ $2 != gtid-set ]] || __checked_var=${__checked_var//[[:space:]]/}
}

# stored_field VAR JSON FIELD GRAMMAR WHAT: VAR := the FIELD of a JSON object read from outside (WHAT: the
# object's location), checked against GRAMMAR (see checked). Fails (1) when the field is absent, and
# leaves VAR empty then.
stored_field() {
  local -n __stored_var=$1
  local __stored_value
  # shellcheck disable=SC2034 # a nameref: the caller's VAR
  __stored_var=
  __stored_value=$(json_field "$2" "$3") || return 1
  checked "$1" "$4" "$__stored_value" "$3 in $5"
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
  valid gtid-set "$text" || die "cannot read the GTID set from the dump header: $(shown "$text")"
  printf '%s' "$text"
}

# Client credentials, for --defaults-extra-file=<(client_cnf USER PASSWORD).
client_cnf() {
  printf '%s\n' '[client]' "user=$1" "password=$(cnf_quote "$2")"
}

# The same for a connection over the network: the server must present a certificate the cluster's CA
# signed for the name the client connects to, or the client gives up before it sends the password
# (ssl-mode=VERIFY_IDENTITY). Every host these scripts connect to is a name the members' certificate
# carries (memberDnsNames): the primary and replicas Services (PRIMARY_HOST, BACKUP_HOST) and a member's
# report_host (<pod>.<headless>); never an address, which no certificate names. What runs inside the
# member itself uses the local socket (local_sql), where TLS has nothing to prove.
verified_cnf() {
  client_cnf "$1" "$2"
  printf '%s\n' 'ssl-mode=VERIFY_IDENTITY' "ssl-ca=$RECON8S_TLS_CA"
}

# The mysql client as every script runs it. OPTIONS_SOURCE (--defaults-extra-file=... or --no-defaults,
# which mysql takes only as its first option) comes first; then the client's own commands are off
# (--commands=OFF: `\!` runs a shell, `source` and `tee` read and write files; a statement from a dump or
# a binary log, or an image's option file, must never turn them on), and so is LOAD DATA LOCAL (which
# would send the server any file of this container), whatever an option file says.
mysql_client() {
  mysql "$1" --commands=OFF --local-infile=0 "${@:2}"
}

# root_password VAR: VAR := root's password as it is now: the mounted credentials Secret's file where the
# container has it (the mysql container: the kubelet updates the file after a rotation, where an
# environment variable would keep the password of the container's start, so the mysql container has
# none), else MYSQL_ROOT_PASSWORD (the bootstrap and the jobs, which run once with the passwords of their
# start). Byte for byte: no command substitution, which would drop a trailing newline.
# (The locals' names start with "__": a caller's VAR must not be one of them.)
root_password() {
  local -n __root_password=$1
  local __root_password_file=${CREDENTIALS_DIR:-$RECON8S_CREDENTIALS_DIR}/$RECON8S_ROOT_PASSWORD_KEY
  # shellcheck disable=SC2034 # a nameref: the caller's VAR
  __root_password=''
  if [[ -r $__root_password_file ]]; then
    # read -d '' reads to the end of the file, and says 1 there.
    IFS= read -r -d '' __root_password <"$__root_password_file" || [[ -n $__root_password ]] ||
      die "$__root_password_file is empty"
  elif [[ -n ${MYSQL_ROOT_PASSWORD-} ]]; then
    __root_password=$MYSQL_ROOT_PASSWORD
  else
    die "root's password is neither in $__root_password_file nor in MYSQL_ROOT_PASSWORD"
  fi
}

# Runs SQL (from -e or stdin) as root over the local socket and prints bare tab-separated rows. The
# credentials come on fd 3 from a here-string: no process that could outlive the call (see above).
local_sql() {
  local password
  root_password password
  mysql_client --defaults-extra-file=/dev/fd/3 --socket="$RECON8S_SOCKET" --batch --skip-column-names "$@" \
    3<<<"$(client_cnf root "$password")"
}
