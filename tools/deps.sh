#!/bin/sh
# tools/deps.sh [extra packages...]: makes sure the Debian packages ember
# needs are installed. As root it installs what is missing, without
# questions (apt-get update first when the package lists do not know a
# package, as on a fresh machine or container); otherwise it prints the one
# apt-get line to run and fails.
pkgs="luajit libluajit-5.1-dev libopenblas-dev lua-busted cmake build-essential pkg-config zlib1g-dev libdlpack-dev $*"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "ember: missing Debian packages; run:" >&2
  echo "  sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "ember: installing$missing"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
apt_install() {
  apt-get install -y -q --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold $missing >"$log" 2>&1
}
# The lists may be missing or stale (a fresh image): update once, then retry.
if ! apt_install; then
  apt-get update -q >>"$log" 2>&1 && apt_install || {
    cat "$log" >&2
    echo "ember: apt-get could not install:$missing" >&2
    exit 1
  }
fi
