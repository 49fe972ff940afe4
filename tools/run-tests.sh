#!/bin/sh
# tools/run-tests.sh BUILD_DIR: runs the C tests (ctest) and the Lua specs
# (busted under LuaJIT, then under PUC Lua 5.4) and ends with one line
# "N passed, N failed" over every suite. Exits non-zero on any failure.
# EMBER_SKIP_C=1 skips the C tests; EMBER_LUA_WRAP="cmd args" runs the specs
# as `cmd args luajit busted ...` (make test-valgrind); EMBER_LUA_PRELOAD is
# added to LD_PRELOAD for the specs only (make test-asan).
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
case $build in /*) buildpath=$build ;; *) buildpath=$here/$build ;; esac
log=$(mktemp)
trap 'rm -f "$log"' EXIT

c_pass=0 c_fail=0
if [ "${EMBER_SKIP_C:-0}" != 1 ]; then
  echo "== C tests (ctest) =="
  (cd "$buildpath" && ctest --output-on-failure -V) >"$log" 2>&1
  crc=$?
  grep -E "^[0-9]+: (ok|FAIL)|tests passed|tests failed|Failed|\*\*\*|ERROR: |runtime error" "$log" |
    grep -v "^[0-9]*: ok"
  c_pass=$(grep -E "^[0-9]+: C-CASES" "$log" | awk '{p+=$3} END {print p+0}')
  c_fail=$(grep -E "^[0-9]+: C-CASES" "$log" | awk '{f+=$5} END {print f+0}')
  [ "$crc" -ne 0 ] && [ "$c_fail" -eq 0 ] && c_fail=1  # a crashed test binary
  echo "C: $c_pass passed, $c_fail failed"
fi

echo "== Lua specs (busted under luajit${EMBER_LUA_WRAP:+, under ${EMBER_LUA_WRAP%% *}}) =="
export LUA_PATH="$here/lua/?.lua;$here/lua/?/init.lua;$here/tests/lua/?.lua;;"
export LUA_CPATH="$buildpath/?.so;;"
export EMBER_BUILD="$buildpath"  # bin/ember, run by specs, uses this build
base_preload=${LD_PRELOAD:-}
if [ -n "${EMBER_LUA_PRELOAD:-}" ]; then
  export LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$EMBER_LUA_PRELOAD"
fi
if [ -n "${EMBER_LUA_WRAP:-}" ]; then
  $EMBER_LUA_WRAP luajit "$(command -v busted)" -o utfTerminal tests/lua >"$log" 2>&1
else
  busted --lua=luajit -o utfTerminal tests/lua >"$log" 2>&1
fi
brc=$?
# ASan warns on each allocation it refuses (the specs' T.empty(1e12)): noise
grep -v "WARNING: AddressSanitizer failed to allocate" "$log"
summary=$(grep -E "[0-9]+ successes? / [0-9]+ failures? / [0-9]+ errors?" "$log" | tail -1)
l_pass=$(echo "$summary" | sed -E 's/^[^0-9]*([0-9]+) success.*/\1/')
l_fail=$(echo "$summary" | sed -E 's/.* ([0-9]+) failures? \/ ([0-9]+) errors?.*/\1 \2/' | awk '{print $1+$2}')
[ -z "$summary" ] && { l_pass=0; l_fail=1; }
[ "$brc" -ne 0 ] && [ "$l_fail" -eq 0 ] && l_fail=1

# The same specs under PUC Lua 5.4 when its module was built (liblua5.4-dev,
# which the set-up installs): every spec runs; only those that need
# LuaJIT's FFI are pending, and counted. EMBER_SKIP_LUA54=1 skips the run.
if [ "${EMBER_SKIP_LUA54:-0}" != 1 ] && [ -f "$buildpath/lua5.4/ember/core.so" ] &&
   command -v lua5.4 >/dev/null; then
  echo "== Lua specs (busted --lua=lua5.4${EMBER_LUA_WRAP:+, under ${EMBER_LUA_WRAP%% *}}) =="
  export LUA_CPATH="$buildpath/lua5.4/?.so;;"
  # the LuaJIT module (linked to libluajit) must not be preloaded into
  # lua5.4, nor its 5.4 twin (the specs' children run bin/ember, LuaJIT,
  # which would then hold two copies): only the sanitizer runtimes
  if [ -n "${EMBER_LUA_PRELOAD:-}" ]; then
    if [ -n "$base_preload" ]; then export LD_PRELOAD="$base_preload"; else unset LD_PRELOAD; fi
  fi
  if [ -n "${EMBER_LUA_WRAP:-}" ]; then
    $EMBER_LUA_WRAP lua5.4 "$(command -v busted)" -o utfTerminal tests/lua >"$log" 2>&1
  else
    busted --lua=lua5.4 -o utfTerminal tests/lua >"$log" 2>&1
  fi
  brc=$?
  grep -v "WARNING: AddressSanitizer failed to allocate" "$log" | grep -A15 -E "^(Failure|Error) "
  summary=$(grep -E "[0-9]+ successes? / [0-9]+ failures? / [0-9]+ errors?" "$log" | tail -1)
  p=$(echo "$summary" | sed -E 's/^[^0-9]*([0-9]+) success.*/\1/')
  f=$(echo "$summary" | sed -E 's/.* ([0-9]+) failures? \/ ([0-9]+) errors?.*/\1 \2/' | awk '{print $1+$2}')
  skipped=$(echo "$summary" | sed -E 's/.* ([0-9]+) pending.*/\1/')
  [ -z "$summary" ] && { p=0; f=1; skipped=0; }
  [ "$brc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  echo "Lua 5.4: $p passed, $f failed, $skipped skipped (they need LuaJIT's FFI)"
  l_pass=$((l_pass + p))
  l_fail=$((l_fail + f))
else
  echo "Lua 5.4: not run (no $buildpath/lua5.4/ember/core.so or no lua5.4; tools/deps.sh installs liblua5.4-dev lua5.4)"
fi

echo "$((c_pass + l_pass)) passed, $((c_fail + l_fail)) failed"
[ $((c_fail + l_fail)) -eq 0 ]
