#!/bin/sh
# tools/deps.sh [extra packages...]: installs the Debian packages ember needs
# when run as root, or prints the one apt-get line to run otherwise.
pkgs="luajit libluajit-5.1-dev libopenblas-dev lua-busted cmake build-essential pkg-config zlib1g-dev libdlpack-dev $*"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "ember: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q $missing >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q $missing >/dev/null; } || exit 1
else
  echo "ember: missing Debian packages; run:"
  echo "  sudo apt-get install -y$missing"
  exit 1
fi
