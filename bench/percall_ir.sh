#!/bin/bash
# bench/percall_ir.sh WORKLOAD [N] [BUILD] [floor]: instructions per call of one
# per-call workload (callgrind; deterministic, unlike time on a shared VM):
# the count of a run of N calls minus that of a run of 1, divided by N.
# Both runs make the same 100,000 warm-up calls first. With "floor", the
# calls run on bench/floor.c's minimal binding (BUILD/floor.so).
w=${1:?workload}; n=${2:-100000}; build=${3:-build-release}; floor=$4
cd "$(dirname "$0")/.."
export LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="$build/?.so;;" OMP_NUM_THREADS=1
export EMBER_BUILD="$build"
ir() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null luajit bench/percall_loop.lua "$w" "$1" $floor 2>&1 |
    awk '/Collected/ {print $4}'
}
a=$(ir 1); b=$(ir "$n")
echo "$w${floor:+ (floor)} $(( (b - a) / n )) Ir/call"
