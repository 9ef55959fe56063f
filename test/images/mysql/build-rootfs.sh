#!/usr/bin/env bash
# Builds the root file system of the mysql test image into DIR (which must not exist yet):
#
#   build-rootfs.sh DIR
#
# Debian sid's mysql-server (MySQL 9.7 LTS, the only MySQL 9.7 build reachable here) in a minbase
# Debian, laid out like the official mysql image: user and group mysql = 999:999, /var/lib/mysql and
# /var/run/mysqld owned by them (mode 1777, as the official image has them), the server and client
# programs on PATH, the clone plugin beside the others. Needs root (debootstrap, chroot) and an apt
# mirror. Every setting that decides what ends up in DIR is in this file: its hash is the cache key.
set -euo pipefail

out=${1:?usage: build-rootfs.sh DIR}
suite=sid
mirror=${RECON8S_DEBIAN_MIRROR:-http://deb.debian.org/debian}
series=9.7
# The server and client programs without Debian's service packaging (mysql-server adds systemd,
# perl and its init scripts, ~120 MB nobody in a container uses). What the pod templates of
# constructs/mysql run besides them: bash, coreutils, sed and gzip (minbase has them), tzdata
# (mysql_tzinfo_to_sql at bootstrap) and rclone (backups streamed to S3-compatible object storage;
# it needs only libc, FUSE and ca-certificates are mere suggestions: the tests' object store speaks
# plain HTTP), and prometheus-mysqld-exporter (the metrics sidecar of spec.monitoring: sid's is current,
# 0.19, which reads SHOW REPLICA STATUS; the tests set spec.monitoring.image to this image).
packages=(mysql-server-core mysql-client-core tzdata rclone prometheus-mysqld-exporter)
# sid's Release file may be past its Valid-Until on the mirror.
apt_opts=(-o Acquire::Check-Valid-Until=false -o Acquire::Retries=3 -o Dpkg::Use-Pty=0)

say() { printf 'mysql-rootfs: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[[ $(id -u) == 0 ]] || die "building the mysql image needs root (debootstrap and chroot); run the tests as root"
[[ ! -e $out ]] || die "$out exists already"

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends debootstrap >&2 ||
    { apt-get -o DPkg::Lock::Timeout=600 update >&2 && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends debootstrap >&2; } ||
    die "could not install debootstrap with apt-get (is the Debian mirror reachable?)"
fi

mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT

say "debootstrap --variant=minbase $suite from $mirror"
if ! debootstrap --variant=minbase "$suite" "$out" "$mirror" >"$out.debootstrap.log" 2>&1; then
  tail -n 20 "$out.debootstrap.log" >&2 || true
  die "debootstrap of Debian $suite from $mirror failed (is the mirror reachable? set RECON8S_DEBIAN_MIRROR to use another)"
fi
rm -f "$out.debootstrap.log"

in_root() { chroot "$out" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

mount -t proc proc "$out/proc" && mounted+=("$out/proc")
# No service may start inside the build root.
printf '#!/bin/sh\nexit 101\n' >"$out/usr/sbin/policy-rc.d"
chmod 0755 "$out/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$out/etc/resolv.conf"

# The official image's identity, fixed before the packages would pick the next free system id.
in_root groupadd --system --gid 999 mysql
in_root useradd --system --uid 999 --gid 999 --home-dir /var/lib/mysql --no-create-home --shell /usr/sbin/nologin mysql

say "apt-get install ${packages[*]}"
in_root apt-get "${apt_opts[@]}" update >&2
in_root apt-get "${apt_opts[@]}" install -y --no-install-recommends "${packages[@]}" >&2

# The official exporter image (prom/mysqld-exporter) has it as /bin/mysqld_exporter; the sidecar runs
# `mysqld_exporter` from PATH, so either image does.
ln -s /usr/bin/prometheus-mysqld-exporter "$out/usr/local/bin/mysqld_exporter"
say "$(in_root /usr/local/bin/mysqld_exporter --version 2>&1 | head -n 1)"

version=$(in_root mysqld --version)
[[ $version == *" $series."* ]] || die "Debian $suite's mysqld is not MySQL $series: $version"
say "$version"

# The official image's layout and default configuration: the data directory empty (the pod mounts
# its volume there), socket and pid file in /var/run/mysqld, errors to stderr (Debian's default
# packaging would write them to /var/log/mysql, which a read-only root file system refuses).
rm -rf "$out/var/lib/mysql" "$out/var/lib/mysql-files" "$out/run/mysqld"
mkdir -p "$out/var/lib/mysql" "$out/var/lib/mysql-files" "$out/run/mysqld"
chown 999:999 "$out/var/lib/mysql" "$out/var/lib/mysql-files" "$out/run/mysqld"
chmod 1777 "$out/var/lib/mysql" "$out/run/mysqld"
chmod 0750 "$out/var/lib/mysql-files"
cat >"$out/etc/my.cnf" <<'CNF'
# The official mysql image's defaults (recon8s' test image). recon8s' pods do not read this file:
# they start mysqld with --defaults-file of their own.
[mysqld]
host_cache_size=0
skip_name_resolve
datadir=/var/lib/mysql
socket=/var/run/mysqld/mysqld.sock
pid_file=/var/run/mysqld/mysqld.pid
secure_file_priv=/var/lib/mysql-files
user=mysql

[client]
socket=/var/run/mysqld/mysqld.sock
CNF

# Smaller: no package lists or caches, documentation, manuals, logs or build-time leftovers.
rm -f "$out/usr/sbin/policy-rc.d"
in_root apt-get clean
rm -rf "$out"/var/lib/apt/lists/* "$out"/var/cache/apt/* "$out"/var/cache/debconf/*-old \
  "$out"/usr/share/doc/* "$out"/usr/share/man/* "$out"/usr/share/locale/* "$out"/usr/share/info/* "$out"/usr/share/lintian \
  "$out"/var/log/* "$out"/tmp/* "$out"/var/tmp/* "$out"/root/.cache
cleanup
mounted=()
# The runtime provides /dev, /proc, /sys and the network files.
rm -rf "$out"/dev/* "$out"/proc/* "$out"/sys/*
: >"$out/etc/resolv.conf"
: >"$out/etc/hostname"
chmod 1777 "$out/tmp"
say "done: $(du -sh "$out" | cut -f1)"
