#!/bin/bash
# bench/percall_ir.sh WORKLOAD [N] [BUILD]: instructions per call of one
# per-call workload (callgrind; deterministic, unlike time on a shared VM):
# the count of a run of N calls minus that of a run of 1, divided by N.
# Both runs make the same 100,000 warm-up calls first.
w=${1:?workload}; n=${2:-100000}; build=${3:-build-release}
cd "$(dirname "$0")/.."
export LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="$build/?.so;;" OMP_NUM_THREADS=1
ir() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null luajit bench/percall_loop.lua "$w" "$1" 2>&1 |
    awk '/Collected/ {print $4}'
}
a=$(ir 1); b=$(ir "$n")
echo "$w $(( (b - a) / n )) Ir/call"
