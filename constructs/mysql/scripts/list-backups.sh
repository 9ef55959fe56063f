#!/bin/bash
# recon8s list-backups: prints what the backup destination holds, for recon8s backups.
#
# What `recon8s backups NAME` runs (a Job from the backup CronJob's template, so that it reaches the
# store or volume exactly as the backups do): one line per backup, oldest first, then the archive's
# reach. Lines are `backup<TAB>{manifest}`, `binlog<TAB>{state}` and, on a volume, `file<TAB>name<TAB>bytes`.
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"
require_env CLUSTER_NAME
if [[ -n ${STORE_BUCKET:-} ]]; then
  # shellcheck source=store.sh
  . "${BASH_SOURCE[0]%/*}/store.sh"
  # The manifests as the store holds them (the CLI judges their values: lib/cli/backup-command.ts), each on
  # its one line: a newline in an object must not start a line of its own.
  while IFS= read -r name; do
    manifest=$(store_cat "base/$name/manifest.json") || die "$(store_failure)"
    printf 'backup\t%s\n' "${manifest//[$'\n\r']/ }"
  done < <(store_list base -R --files-only --include '/*/manifest.json' | sed -n 's|^\([0-9]\{8\}T[0-9]\{6\}Z\)/manifest\.json$|\1|p' | sort)
  if [[ -n $(store_list binlog --files-only --include /state.json) ]]; then
    state=$(store_cat binlog/state.json) || die "$(store_failure)"
    printf 'binlog\t%s\n' "${state//[$'\n\r']/ }"
  fi
else
  shopt -s nullglob
  for f in "${BACKUP_DIR:-$RECON8S_BACKUP_DIR}/$CLUSTER_NAME"-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z.sql.gz; do
    printf 'file\t%s\t%s\n' "${f##*/}" "$(stat -c %s -- "$f")"
  done
fi
