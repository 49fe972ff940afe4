#!/bin/sh
# tools/deps.sh [extra packages...]: makes sure the Debian packages ember
# needs are installed. As root it installs what is missing, without
# questions (apt-get update first when the package lists do not know a
# package, as on a fresh machine or container); otherwise it prints the one
# apt-get line to run and fails.
#
# LuaJIT: Debian ships two that conflict, upstream's (luajit,
# libluajit-5.1-dev) and OpenResty's branch (luajit2, libluajit2-5.1-dev),
# which nginx's Lua module needs. Either satisfies ember: whichever runtime
# library is installed decides the family, and only when neither is present
# is upstream's installed. apt-get runs with --no-remove, so it never
# removes an installed LuaJIT or anything that depends on one
# (docs/install.md).
installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
if installed libluajit2-5.1-2 || installed luajit2 || installed libluajit2-5.1-dev; then
  luajit_pkgs="luajit2 libluajit2-5.1-dev"
else
  luajit_pkgs="luajit libluajit-5.1-dev"
fi
# EMBER_LUAJIT=upstream|openresty picks the family explicitly (the CI swap)
case "${EMBER_LUAJIT:-}" in
  upstream) luajit_pkgs="luajit libluajit-5.1-dev" ;;
  openresty) luajit_pkgs="luajit2 libluajit2-5.1-dev" ;;
esac
pkgs="$luajit_pkgs liblua5.4-dev lua5.4 libopenblas-dev lua-busted cmake build-essential pkg-config zlib1g-dev libdlpack-dev libedit-dev lua-cjson libsleef-dev libopenmpi-dev openmpi-bin bc $*"
missing=""
for p in $pkgs; do
  installed "$p" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "ember: missing Debian packages; run:" >&2
  echo "  sudo apt-get install -y --no-remove$missing" >&2
  exit 1
fi
echo "ember: installing$missing"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
apt_install() {
  apt-get install -y -q --no-install-recommends --no-remove \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold $missing >"$log" 2>&1
}
# The lists may be missing or stale (a fresh image): update once, then retry.
if ! apt_install; then
  apt-get update -q >>"$log" 2>&1 && apt_install || {
    cat "$log" >&2
    echo "ember: apt-get could not install:$missing" >&2
    if grep -q "removed" "$log"; then
      echo "ember: (it would have removed installed packages, which tools/deps.sh never does)" >&2
    fi
    exit 1
  }
fi
