#!/bin/sh
# tools/fuzz.sh [seconds] | [TARGET|all] [seconds]: builds the libFuzzer
# targets (clang, ASan + UBSan) and runs each for a bounded time (default
# 60 s), starting from tests/fuzz/corpus/<target>. Targets: the file
# loaders npy, npz, ember, safetensors, torch (fuzz_loaders.c), the
# index-expression machinery index (fuzz_index.c) and the view-op sequence
# interpreter viewops (fuzz_viewops.c). New interesting inputs go to build-fuzz/corpus/<target>;
# copy the ones that found a bug into tests/fuzz/corpus/<target> so ctest
# replays them (fuzz_replay_<target>).
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
case "$1" in
  ''|*[!0-9]*) targets=${1:-all}; secs=${2:-60} ;;
  *) targets=all; secs=$1 ;;   # tools/fuzz.sh SECONDS
esac
[ "$targets" = all ] && targets="npy npz ember safetensors torch index viewops"
mkdir -p build-fuzz
srcs="$(find engine/src -name "*.c" -not -path "*/cuda/*" | sort)"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
cflags="-g -O1 -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -Iengine/include -Iengine/src -Iengine/third_party $(pkg-config --cflags openblas)"
libs="$(pkg-config --libs openblas) -lz -lm -lpthread"
# The engine is built once (instrumented for coverage), then linked into
# each target.
lib=build-fuzz/libember_fuzz.a
if [ ! -f "$lib" ] || [ -n "$(find engine -newer "$lib" -name "*.[ch]")" ]; then
  rm -rf build-fuzz/obj && mkdir -p build-fuzz/obj
  for f in $srcs; do
    clang $cflags $san -fsanitize=fuzzer-no-link -c "$f" \
      -o "build-fuzz/obj/$(echo "$f" | tr / _).o"
  done
  rm -f "$lib" && ar rcs "$lib" build-fuzz/obj/*.o
fi
# A file that cannot be allocated is an error the engine reports, not a crash.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1}
# Each target counts as passed when libFuzzer ran its time without a
# finding; the last line sums them like the test suites do.
pass=0 fail=0
for t in $targets; do
  T=$(echo "$t" | tr a-z A-Z)
  case $t in
    npy|npz|ember|safetensors|torch) src=tests/fuzz/fuzz_loaders.c ;;
    *) src=tests/fuzz/fuzz_$t.c ;;
  esac
  bin=build-fuzz/fuzz_$t
  clang $cflags $san -fsanitize=fuzzer -DFUZZ_$T "$src" "$lib" $libs -o "$bin"
  mkdir -p "build-fuzz/corpus/$t"
  echo "== fuzzing $t for ${secs}s"
  # FUZZ_SEED with FUZZ_RUNS (a count instead of a time) makes a run
  # deterministic: CI explores exactly the same inputs on every machine
  if "$bin" -max_total_time="$secs" -timeout=10 -max_len=65536 -rss_limit_mb=2048 \
    ${FUZZ_SEED:+-seed=$FUZZ_SEED} ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} \
    "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "fuzz: target $t found a failure (the crashing input is in the current directory)"
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
