#!/usr/bin/env bash
# tests/dist/run.sh [BUILD]: T.distributed under Open MPI's mpirun on this
# machine (issue 17; docs/distributed.md). Runs the case scripts of
# tests/dist/ under mpirun -np 2 and -np 3 (collectives, DDP, the sampler;
# collectives also under Lua 5.4), the timeout case (one rank skips an
# all_reduce: the others must raise, the job must end non-zero and soon),
# a failing rank (bin/ember aborts the job at once) and bin/ember --nproc.
# Every mpirun is under `timeout`, so nothing here can hang CI.
# Ends with "N passed, N failed"; exits non-zero on any failure. Skips
# (exit 0, says why) without mpirun or without build/ember/dist.so.
#
# Environment: EMBER_BUILD (default build), DIST_TIMEOUT (seconds per
# mpirun, default 150), MPIRUN (default mpirun).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 1
build=${1:-${EMBER_BUILD:-build}}
case $build in /*) ;; *) build=$here/$build ;; esac
export EMBER_BUILD=$build
limit=${DIST_TIMEOUT:-150}
mpirun=${MPIRUN:-mpirun}

skip() {
  echo "dist: SKIPPED: $*"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
}
command -v "$mpirun" >/dev/null || skip "no $mpirun (Debian: openmpi-bin libopenmpi-dev)"
[ -f "$build/ember/dist.so" ] || skip "no $build/ember/dist.so (built when CMake finds MPI: libopenmpi-dev)"

# one machine: shared memory only; no CMA (containers forbid
# process_vm_readv); as root Open MPI wants --allow-run-as-root
mpi_args=(--oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none)
[ "$(id -u)" = 0 ] && mpi_args+=(--allow-run-as-root)

env_args=()
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
log=$(mktemp /tmp/ember-dist.XXXXXX)
trap 'rm -f "$log"' EXIT

# cases NP SCRIPT [LUA]: the script's "ok"/"FAIL" lines count one each; a
# crash, a hang or a missing summary line is one more failure
cases() {
  local np=$1 script=$2 lua=${3:-luajit} rc
  local start=$SECONDS
  if [ "$lua" = luajit ]; then
    timeout "$limit" "$mpirun" "${mpi_args[@]}" ${env_args[@]+"${env_args[@]}"} -np "$np" ./bin/ember "tests/dist/$script" >"$log" 2>&1
  else
    timeout "$limit" "$mpirun" "${mpi_args[@]}" -np "$np" \
      -x LUA_PATH="$here/lua/?.lua;$here/lua/?/init.lua;;" -x LUA_CPATH="$build/lua5.4/?.so;;" \
      "$lua" "tests/dist/$script" >"$log" 2>&1
  fi
  rc=$?
  while read -r line; do
    case $line in
      "ok   "*) ok "$script: ${line#ok   }${lua:+ [$lua]}" ;;
      "FAIL "*) bad "$script: ${line#FAIL }${lua:+ [$lua]}" ;;
    esac
  done < <(grep -E "^(ok   |FAIL )" "$log")
  if [ "$rc" -ne 0 ] || ! grep -q "^dist-cases: " "$log"; then
    bad "$script under mpirun -np $np ($lua) ended with status $rc after $((SECONDS - start)) s:"
    grep -vE "^(ok   |FAIL )" "$log" | tail -25
  else
    grep "^rank " "$log" | head -20   # the failing ranks' messages
    echo "dist: $script -np $np ($lua): $((SECONDS - start)) s"
  fi
}

cases 2 collectives.lua
cases 3 collectives.lua
cases 4 collectives.lua   # a power-of-two group past 2: recursive doubling in 2 rounds
if command -v lua5.4 >/dev/null && [ -f "$build/lua5.4/ember/dist.so" ]; then
  cases 2 collectives.lua lua5.4
fi
cases 2 ddp.lua
cases 3 ddp.lua
cases 2 sampler.lua
cases 3 sampler.lua
cases 3 options.lua
env_args=(-x DIST_WORLD_TIMEOUT=inf)
cases 2 collectives.lua   # the world group without a timeout: MPI's blocking forms
env_args=(-x EMBER_MPI_THREAD_LEVEL=single)
cases 2 collectives.lua   # MPI initialized at MPI_THREAD_SINGLE (Open MPI takes no locks)
env_args=(-x EMBER_DISTRIBUTED_DEBUG=DETAIL)
cases 3 detail.lua
cases 2 collectives.lua   # every collective passes the DETAIL check
env_args=()

# -- the timeout: rank 1 skips an all_reduce of a group with timeout = 2 s
start=$SECONDS
timeout 60 "$mpirun" "${mpi_args[@]}" -np 3 ./bin/ember tests/dist/timeout.lua >"$log" 2>&1
rc=$?
took=$((SECONDS - start))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then ok "timeout: the job ended with status $rc"; else bad "timeout: the job ended with status $rc (expected an abort)"; fi
[ "$took" -le 30 ] && ok "timeout: it ended in $took s" || bad "timeout: it took $took s"
for r in 0 2; do
  if grep -q "rank $r: all_reduce: .*all_reduce: timed out after 2 s (rank $r of 3)" "$log"; then
    ok "timeout: rank $r raised 'all_reduce: timed out after 2 s (rank $r of 3)'"
  else
    bad "timeout: rank $r did not raise the timeout"
  fi
done
grep -q "rank 0: then: broadcast: the process group is unusable after an earlier failure (all_reduce timed out)" "$log" &&
  ok "timeout: a later collective refuses the broken group" || bad "timeout: a later collective did not refuse"
grep -q "woke up" "$log" && bad "timeout: the skipping rank outlived the job" || ok "timeout: the skipping rank was ended with the job"
[ "$fail" -gt 0 ] && tail -20 "$log"

# -- a rank that fails: bin/ember aborts the job instead of leaving the
# others waiting for the group's timeout (1800 s here)
start=$SECONDS
timeout 60 "$mpirun" "${mpi_args[@]}" -np 2 ./bin/ember -e '
  local T = require "ember"
  T.distributed.init_process_group {}
  if T.distributed.get_rank() == 1 then error("rank 1 gives up") end
  T.distributed.all_reduce(T.ones(2))
  print("rank 0 went on")' >"$log" 2>&1
rc=$?
took=$((SECONDS - start))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -le 30 ] && grep -q "rank 1 gives up" "$log" &&
   ! grep -q "rank 0 went on" "$log"; then
  ok "a failing rank ends the job at once (status $rc, $took s)"
else
  bad "a failing rank: status $rc after $took s"
  tail -15 "$log"
fi

# -- EMBER_MPI_THREAD_LEVEL: a value that is not a level is refused, naming it
if timeout 60 "$mpirun" "${mpi_args[@]}" -x EMBER_MPI_THREAD_LEVEL=threaded -np 2 ./bin/ember -e '
  local T = require "ember"
  local ok, err = pcall(T.distributed.init_process_group, {})
  print(ok, err)' >"$log" 2>&1 &&
  grep -q "init_process_group: EMBER_MPI_THREAD_LEVEL must be one of single, funneled, serialized, multiple; got .threaded." "$log"; then
  ok "EMBER_MPI_THREAD_LEVEL=threaded is refused, naming the variable and the levels"
else
  bad "EMBER_MPI_THREAD_LEVEL=threaded"
  tail -15 "$log"
fi

# -- bin/ember --nproc N runs mpirun itself
if timeout 60 ./bin/ember --nproc 2 -e '
  local T = require "ember"
  T.distributed.init_process_group {}
  local t = T.ones(1)
  T.distributed.all_reduce(t)
  print(string.format("rank %d of %d sum %g", T.distributed.get_rank(), T.distributed.get_world_size(), t:item()))' \
  >"$log" 2>&1 && grep -q "rank 0 of 2 sum 2" "$log" && grep -q "rank 1 of 2 sum 2" "$log"; then
  ok "bin/ember --nproc 2 starts 2 ranks"
else
  bad "bin/ember --nproc 2"
  tail -15 "$log"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
