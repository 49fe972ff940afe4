#!/bin/sh
# tools/cuda-check.sh [BUILD_DIR]: the CUDA backend's checks on a machine
# WITH a GPU (docs/cuda.md). Builds with -DEMBER_CUDA=ON into BUILD_DIR
# (default build-cuda), runs the C tests (the allocator's logic, the
# kernel tables, the no-driver / device branches of test_kernels), the
# device-parametrised specs (tests/lua/cuda_spec.lua) and the whole busted
# suite, compute-sanitizer's memcheck over the cuda specs when it is
# installed, and prints one summary. Exits non-zero on any failure, or
# when the cuda cases were skipped (no device seen: nothing was checked).
#
# A machine without LuaJIT/busted/OpenBLAS (the lent GPU machines): put the
# Debian .deb files (apt-get download luajit libluajit-5.1-2 libluajit-5.1-dev
# lua-busted ... here) in EMBER_DEBS=dir; they are unpacked with dpkg -x
# under BUILD_DIR/debroot and put on PATH / LD_LIBRARY_PATH / pkg-config's path.
#
# EMBER_CUDA_CHECK_QUICK=1 runs only the C tests and cuda_spec. The GPU
# benchmarks (bench/bench_cuda.py, at most EMBER_CUDA_BENCH_SECONDS, 300)
# run after cuda_spec unless EMBER_CUDA_CHECK_BENCH=0; EMBER_CHECK_OUT=dir
# gets copies of the logs and bench results (the device tool's $OUT).
set -u
build=${1:-build-cuda}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
case $build in /*) ;; *) build=$here/$build ;; esac
mkdir -p "$build"
log=$build/cuda-check.log
: >"$log"
start=$(date +%s)
say() { echo "$*" | tee -a "$log"; }

if [ -n "${EMBER_DEBS:-}" ]; then
  root=$build/debroot
  mkdir -p "$root"
  for d in "$EMBER_DEBS"/*.deb; do dpkg -x "$d" "$root"; done
  arch=$(uname -m)-linux-gnu
  export PATH="$root/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$root/usr/lib/$arch:$root/usr/lib:${LD_LIBRARY_PATH:-}"
  export PKG_CONFIG_PATH="$root/usr/lib/$arch/pkgconfig:$root/usr/share/pkgconfig:${PKG_CONFIG_PATH:-}"
  export LUA_PATH="$root/usr/share/lua/5.1/?.lua;$root/usr/share/lua/5.1/?/init.lua;;"
  export LUA_CPATH="$root/usr/lib/$arch/lua/5.1/?.so;;"
fi

say "== device =="
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$log"
else
  say "nvidia-smi: not found"
fi

say "== build (EMBER_CUDA=ON) =="
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_CUDA=ON >>"$log" 2>&1 ||
   ! make -C "$build" -j"$(nproc)" >>"$log" 2>&1; then
  say "cuda-check: BUILD FAILED (see $log)"
  exit 1
fi

say "== C tests =="
(cd "$build" && ctest --output-on-failure) >>"$log" 2>&1
c_rc=$?
c_pass=0 c_fail=0
for t in "$build"/test_*; do
  [ -x "$t" ] || continue
  out=$("$t" 2>&1 | grep "C-CASES")
  c_pass=$((c_pass + $(echo "$out" | awk '{print $2+0}')))
  c_fail=$((c_fail + $(echo "$out" | awk '{print $4+0}')))
done
say "C: $c_pass passed, $c_fail failed (ctest rc $c_rc)"

export LUA_PATH="$here/lua/?.lua;$here/lua/?/init.lua;$here/tests/lua/?.lua;${LUA_PATH:-;}"
export LUA_CPATH="$build/?.so;${LUA_CPATH:-;}"
export EMBER_BUILD="$build"

busted_counts() { # log -> "passed failed pending"
  grep -E "[0-9]+ successes? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending" "$1" | tail -1 |
    sed -E 's/^[^0-9]*([0-9]+) success[^0-9]*([0-9]+) failure[^0-9]*([0-9]+) error[^0-9]*([0-9]+) pending.*/\1 \2 \3 \4/' |
    awk '{print $1, $2 + $3, $4}'
}

say "== cuda specs (tests/lua/cuda_spec.lua) =="
busted --lua=luajit -o utfTerminal tests/lua/cuda_spec.lua >"$build/cuda_spec.log" 2>&1
cat "$build/cuda_spec.log" >>"$log"
set -- $(busted_counts "$build/cuda_spec.log") 0 1 0
s_pass=$1 s_fail=$2 s_skip=$3
say "cuda specs: $s_pass passed, $s_fail failed, $s_skip skipped"

say "== nccl backend, a world of one (tests/dist/nccl_world1.lua) =="
n_res="not built"
if [ -f "$build/ember/dist_nccl.so" ]; then
  if luajit tests/dist/nccl_world1.lua >"$build/nccl.log" 2>&1; then n_res="ok"; else n_res="FAILED"; fi
  cat "$build/nccl.log" >>"$log"
  n_res="$n_res ($(grep NCCL-CASES "$build/nccl.log" | tail -1))"
fi
say "nccl: $n_res"

# the GPU rows (bench/bench_cuda.py; make bench-cuda), before the whole
# suite: on a lent machine the measurements matter more than a second
# pass of the CPU specs. EMBER_CUDA_CHECK_BENCH=0 skips them.
b_res="not run"
if [ "${EMBER_CUDA_CHECK_BENCH:-1}" = 1 ] && [ "${EMBER_CUDA_CHECK_QUICK:-0}" != 1 ]; then
  say "== GPU benchmarks (bench/bench_cuda.py) =="
  make -C "$build" bench_cuda_ref >>"$log" 2>&1 || say "(no bench_cuda_ref: the C column stays empty)"
  if timeout "${EMBER_CUDA_BENCH_SECONDS:-300}" python3 bench/bench_cuda.py --build "$build" \
       --out "$build/results-cuda.md" >"$build/bench.log" 2>&1; then
    rows=$(grep -E '\| (met|MISSED) \|$' "$build/results-cuda.md" | grep -vc '^| workload')
    b_res="$build/results-cuda.md ($rows rows against a target, $(grep -c '| MISSED |' "$build/results-cuda.md") missed)"
  else
    b_res="FAILED or timed out (see $build/bench.log)"
  fi
  cat "$build/bench.log" >>"$log"
  say "bench: $b_res"
fi

a_pass=- a_fail=- a_skip=- san="not run"
if [ "${EMBER_CUDA_CHECK_QUICK:-0}" != 1 ]; then
  say "== the whole suite (busted, luajit) =="
  busted --lua=luajit -o utfTerminal tests/lua >"$build/suite.log" 2>&1
  cat "$build/suite.log" >>"$log"
  set -- $(busted_counts "$build/suite.log") 0 1 0
  a_pass=$1 a_fail=$2 a_skip=$3
  say "suite: $a_pass passed, $a_fail failed, $a_skip skipped"
  if command -v compute-sanitizer >/dev/null 2>&1; then
    say "== compute-sanitizer memcheck (cuda specs) =="
    if compute-sanitizer --tool memcheck --error-exitcode 99 \
         luajit "$(command -v busted)" -o utfTerminal tests/lua/cuda_spec.lua >>"$log" 2>&1; then
      san="clean"
    else
      san="ERRORS (see $log)"
    fi
  else
    san="not installed"
  fi
fi

secs=$(( $(date +%s) - start ))
say "== summary =="
say "cuda-check: C $c_pass passed / $c_fail failed; cuda specs $s_pass passed / $s_fail failed / $s_skip skipped; suite $a_pass passed / $a_fail failed / $a_skip skipped; nccl: $n_res; memcheck: $san; bench: $b_res; ${secs}s"
# EMBER_CHECK_OUT=dir (the device tool's $OUT): the logs and results there
if [ -n "${EMBER_CHECK_OUT:-}" ]; then
  mkdir -p "$EMBER_CHECK_OUT"
  for f in "$log" "$build/cuda_spec.log" "$build/suite.log" "$build/bench.log" \
           "$build/results-cuda.md" "$build/nccl.log"; do
    [ -f "$f" ] && cp "$f" "$EMBER_CHECK_OUT/"
  done
fi
[ "$c_fail" -eq 0 ] && [ "$c_rc" -eq 0 ] && [ "$s_fail" -eq 0 ] || exit 1
[ "$a_fail" = - ] || [ "$a_fail" -eq 0 ] || exit 1
case $san in ERRORS*) exit 1 ;; esac
case $n_res in FAILED*) exit 1 ;; esac
if [ "$s_skip" -ne 0 ]; then
  say "cuda-check: the cuda cases were skipped (no device seen): nothing ran on a GPU"
  exit 2
fi
exit 0
