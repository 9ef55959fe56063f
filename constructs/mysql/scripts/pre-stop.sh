#!/bin/bash
# recon8s pre-stop, the mysql container's preStop hook: asks the agent beside mysqld to fence this member
# (read-only, its clients' sessions ended, the source side off) and waits for its answer, before the
# kubelet sends mysqld SIGTERM. Over the pod's loopback: the agent fences only at the request of the pod
# itself, never of whatever else reaches its port (lib/agent/agent.ts).
#
# A failure does not hold the stop (the kubelet records a FailedPreStopHook Event and stops mysqld all
# the same); the agent then judges that stop unsafe at mysqld's next start (lib/agent/stops.ts).
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"

# Where the agent listens: every address of the pod, so its loopback (AGENT_ADDRESS only where several
# members share one network, as in the project's sandbox).
host=${AGENT_ADDRESS:-127.0.0.1}
if ! exec 3<>"/dev/tcp/$host/$RECON8S_AGENT_PORT"; then
  log "the agent does not answer on $host:$RECON8S_AGENT_PORT: mysqld stops without being fenced first"
  exit 1
fi
printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$RECON8S_AGENT_PRE_STOP_PATH" "$host" >&3
status=
IFS=' ' read -r _ status _ <&3 || true
# The headers, then the agent's answer (one line).
while IFS= read -r line <&3 && [[ $line != $'\r' ]]; do :; done
answer=
IFS= read -r answer <&3 || true
exec 3<&-
if [[ $status != 200 ]]; then
  log "the agent did not fence this member (HTTP ${status:-without an answer}): ${answer:-}"
  exit 1
fi
printf '%s\n' "$answer"
