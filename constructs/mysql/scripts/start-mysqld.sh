#!/bin/bash
# recon8s start-mysqld, the mysql container's command: puts in place a clone the agent made (see
# reprovision.sh), then runs mysqld.
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"
# shellcheck source=reprovision.sh
. "${BASH_SOURCE[0]%/*}/reprovision.sh"
adopt_clone
# mysqld directly, with our my.cnf only: nothing depends on the image's entrypoint or its /etc/my.cnf
# (spec.image may be another build). exec: mysqld gets the kubelet's signals.
exec mysqld --defaults-file="$RECON8S_MY_CNF"
