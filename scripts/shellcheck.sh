#!/usr/bin/env bash
# npm run lint's shell step: shellcheck, with no finding allowed, over the scripts the MySQL pods and
# jobs run (constructs/mysql/scripts/*.sh, the source of what the scripts ConfigMap ships) and over
# this file. shellcheck is the Debian package of that name: when it is missing and this runs as root
# (CI, and the test suite, which installs the real node's packages the same way) it is installed with
# apt-get; otherwise this says what to install.
set -euo pipefail
cd "${BASH_SOURCE[0]%/*}/.."

say() { printf 'shellcheck.sh: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}

if ! command -v shellcheck >/dev/null 2>&1; then
  [[ $(id -u) == 0 ]] ||
    die "shellcheck is not installed: install it (Debian and Ubuntu: sudo apt-get install shellcheck; macOS: brew install shellcheck), or run npm run lint as root to have it installed"
  command -v apt-get >/dev/null 2>&1 ||
    die "shellcheck is not installed and there is no apt-get to install it with: install shellcheck (https://www.shellcheck.net)"
  say "installing the Debian package shellcheck"
  export DEBIAN_FRONTEND=noninteractive
  # Other lanes of a test run may be installing packages too: wait for dpkg's lock rather than fail.
  apt=(apt-get -o DPkg::Lock::Timeout=600 -q)
  # Quiet when it works; everything apt-get said when it does not. The package lists may be stale or
  # absent (a fresh container): update, then try again.
  if ! out=$("${apt[@]}" install -y --no-install-recommends shellcheck 2>&1); then
    out=$({ "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends shellcheck; } 2>&1) || {
      printf '%s\n' "$out" >&2
      die "could not install shellcheck with apt-get (is the Debian mirror reachable?)"
    }
  fi
  command -v shellcheck >/dev/null 2>&1 || die "apt-get installed shellcheck, but it is not on PATH ($PATH)"
fi

# Options in constructs/mysql/scripts/.shellcheckrc: the scripts source each other from their own directory.
shellcheck constructs/mysql/scripts/*.sh scripts/shellcheck.sh
