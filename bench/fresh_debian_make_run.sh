#!/bin/bash
# Issue #32.1: the README's first command on a fresh Debian 12 machine, apt included. Makes a
# fresh Debian 12 root with debootstrap in DIR (minbase plus what the README assumes a machine
# has: the compiler toolchain, git, CA certificates), clones this repository's HEAD into it, and
# times `make deps` (what `make run` installs: apt-get update and install) and then `make run`
# (configure, the meshrun binary alone, the first example) inside it. Prints one line with both
# times and the example's output, and leaves the logs in DIR/root.
#
#   sudo bash bench/fresh_debian_make_run.sh DIR     (root; DIR must not exist; deb.debian.org)
#
# A chroot shares this machine's kernel and CPUs: the build is timed as on this machine; only the
# packages are fresh. Minutes: about 3 here (debootstrap under 1, then make run).
set -euo pipefail
DIR=${1:?usage: fresh_debian_make_run.sh DIR}
[ "$(id -u)" = 0 ] || { echo "fresh_debian_make_run.sh: needs root (debootstrap, chroot)" >&2; exit 2; }
[ ! -e "$DIR" ] || { echo "fresh_debian_make_run.sh: $DIR exists" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/.." && pwd)
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
t=$SECONDS
debootstrap --variant=minbase --include=build-essential,git,ca-certificates bookworm "$DIR" \
  http://deb.debian.org/debian >"$DIR.debootstrap.log" 2>&1
echo "debootstrap: $((SECONDS - t)) s (not counted)"
# The sources a Debian 12 installation has: the release, its updates and security.
rm -f "$DIR/etc/apt/sources.list"
cat >"$DIR/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
cp /etc/resolv.conf "$DIR/etc/resolv.conf"
git -C "$REPO" bundle create "$DIR/root/meshrun.bundle" HEAD >/dev/null 2>&1
mount -t proc proc "$DIR/proc"
mount --rbind /sys "$DIR/sys"
mount --rbind /dev "$DIR/dev"
trap 'umount -R "$DIR/proc" "$DIR/sys" "$DIR/dev" 2>/dev/null || true' EXIT
chroot "$DIR" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c '
  set -e
  cd /root && git -c advice.detachedHead=false clone -q meshrun.bundle meshrun && cd meshrun
  t0=$SECONDS
  make deps >/root/deps.log 2>&1
  t1=$SECONDS
  make run >/root/run.log 2>&1
  t2=$SECONDS
  echo "commit $(git rev-parse --short HEAD): make deps (apt) $((t1 - t0)) s, then make run $((t2 - t1)) s: $((t2 - t0)) s in all; it printed $(tail -n 1 /root/run.log)"
'
