#!/bin/sh
# tools/ci-openresty.sh: the second LuaJIT, for CI (.ci/run runs it last,
# on a throwaway machine). Swaps upstream's LuaJIT for OpenResty's
# (`apt-get install luajit2 libluajit2-5.1-dev` replaces luajit and
# libluajit-5.1-dev: this is the one place that removes a LuaJIT, on
# purpose), installs nginx with its Lua module, builds ember afresh against
# it in build-luajit2/, runs the Lua specs there, then the nginx example's
# test (tests/serve/run.sh). Ends with one "N passed, N failed" line.
# Never run this on a machine whose LuaJIT you want to keep.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
export DEBIAN_FRONTEND=noninteractive
build=build-luajit2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
pkgs="luajit2 libluajit2-5.1-dev nginx-light libnginx-mod-http-lua lua-cjson wrk curl"
if [ "$(id -u)" != 0 ]; then
  echo "ci-openresty: needs root (apt-get install $pkgs)"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "== swapping to OpenResty's LuaJIT: apt-get install $pkgs =="
if ! { apt-get install -y -q --no-install-recommends $pkgs >"$log" 2>&1 ||
       { apt-get update -q >>"$log" 2>&1 && apt-get install -y -q --no-install-recommends $pkgs >>"$log" 2>&1; }; }; then
  tail -30 "$log"
  echo "0 passed, 1 failed"
  exit 1
fi
grep -E "^(Removing|Setting up) (lua|libluajit|nginx|libnginx)" "$log" || true
luajit -v
pkg-config --modversion luajit
# the same set-up the README's commands run: deps.sh must now accept luajit2
./tools/deps.sh || { echo "0 passed, 1 failed"; exit 1; }
dpkg-query -W -f='${Status}' luajit 2>/dev/null | grep -q "install ok installed" &&
  { echo "ci-openresty: deps.sh brought upstream's luajit back"; echo "0 passed, 1 failed"; exit 1; }

echo "== build against luajit2 ($build) =="
rm -rf "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
  make --no-print-directory -C "$build" -j"$(nproc)" >"$log" 2>&1 ||
  { tail -30 "$log"; echo "0 passed, 1 failed"; exit 1; }
ldd "$build/ember/core.so" | grep luajit

pass=0 fail=0
add() { # adds the last "N passed, N failed" of a log
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
  if [ -z "$line" ]; then fail=$((fail + 1)); return; fi
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed}
  pass=$((pass + p)); fail=$((fail + f))
  [ "$2" != 0 ] && [ "$f" -eq 0 ] && fail=$((fail + 1))
  return 0
}
echo "== Lua specs under OpenResty's LuaJIT =="
EMBER_SKIP_C=1 EMBER_SKIP_LUA54=1 ./tools/run-tests.sh "$build" >"$log" 2>&1
rc=$?
grep -E -A12 "^(Failure|Error) " "$log"
tail -n 1 "$log"
add "$log" "$rc"
if [ -x tests/serve/run.sh ]; then
  echo "== nginx host (tests/serve/run.sh) =="
  EMBER_BUILD="$here/$build" ./tests/serve/run.sh >"$log" 2>&1
  rc=$?
  cat "$log"
  add "$log" "$rc"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
